/**
 * What a receiver would do with a message, found by doing it: the inbox's
 * check and the receiver's real apply run in the receiver's transaction,
 * which is then always rolled back. A redrive's dry run asks this of each
 * dead letter, so the operator sees "applies", "already applied", "not
 * yet", "refused" or the error before anything is sent.
 *
 * It leaves no trace: no inbox row, no effect, no outbox row (a receiver
 * that sends in its transaction appends there, and the rollback takes it;
 * hints it queued for after the commit never run). It never waits: a lock
 * another transaction holds, or a statement that runs long, ends the
 * preview as `fail` after `timeoutMs`.
 */
import type { Sql } from "../db/connect.ts";
import { asService } from "../db/service.ts";
import type { Envelope } from "../outbox/envelope.ts";
import { NotYet, refusalOf } from "./errors.ts";
import {
  type Apply,
  beyondHorizon,
  horizonReason,
  inboxRecord,
  type ReceiveOptions,
} from "./receive.ts";
import { alreadyApplied, claimSuperseded } from "./supersedes.ts";

/** What a redrive of the message would do at its receiver. */
export type PreviewOutcome =
  | "apply"
  | "duplicate"
  | "not_yet"
  | "refused"
  | "fail"
  | "beyond_horizon";

export interface Preview {
  outcome: PreviewOutcome;
  /** The answer it would give, the reason, or the error, in words. */
  detail: string;
}

export interface PreviewOptions extends ReceiveOptions {
  /** How long the preview may wait for a lock or a statement (default 2 s). */
  timeoutMs?: number;
}

/** The end of a preview: thrown to roll the transaction back. */
class Previewed extends Error {
  override name = "Previewed";
  constructor(readonly preview: Preview) {
    super("a preview rolls back");
  }
}

/** PostgreSQL's lock_timeout and statement_timeout. */
const WAITED = new Set(["55P03", "57014"]);

/**
 * Previews `envelope` at `service`'s inbox, applying it with `apply` in a
 * transaction that is rolled back whatever happens.
 */
export async function previewReceive(
  sql: Sql,
  service: string,
  envelope: Envelope,
  apply: Apply,
  options: PreviewOptions,
): Promise<Preview> {
  if (beyondHorizon(envelope, options)) {
    return { outcome: "beyond_horizon", detail: horizonReason(options) };
  }
  const timeout = `${options.timeoutMs ?? 2_000}ms`;
  try {
    await asService(
      sql,
      service,
      { tenantId: envelope.tenantId },
      async (tx) => {
        await tx.sql`
          select set_config('lock_timeout', ${timeout}, true),
                 set_config('statement_timeout', ${timeout}, true)`;
        const [seen] = await tx.sql<
          { status: number; outcome: Record<string, unknown> }[]
        >`
          select status, outcome from ${tx.sql(`${service}.inbox`)}
           where message_id = ${envelope.messageId}`;
        if (seen) {
          throw new Previewed({
            outcome: "duplicate",
            detail: `answered ${seen.status} before: ${
              JSON.stringify(seen.outcome)
            }`,
          });
        }
        const repeatOf = envelope.supersedes
          ? await claimSuperseded(tx, envelope)
          : undefined;
        if (repeatOf) {
          throw new Previewed({
            outcome: "duplicate",
            detail: JSON.stringify(alreadyApplied(service, repeatOf)),
          });
        }
        const outcome = await apply(tx, envelope);
        const [row] = await inboxRecord(tx, envelope, outcome, {
          watchOrder: false,
        });
        throw new Previewed({
          outcome: "apply",
          detail: JSON.stringify(row.outcome),
        });
      },
    );
  } catch (error) {
    if (error instanceof Previewed) return error.preview;
    const refused = refusalOf(error);
    if (refused) return { outcome: "refused", detail: refused.message };
    if (error instanceof NotYet) {
      return { outcome: "not_yet", detail: error.message };
    }
    const code = (error as { code?: string }).code;
    if (code && WAITED.has(code)) {
      return {
        outcome: "fail",
        detail:
          `would wait longer than ${timeout} (a lock or a slow statement)`,
      };
    }
    return { outcome: "fail", detail: (error as Error).message };
  }
  // asService returned: the preview's own throw never came.
  throw new Error("a preview's transaction committed");
}
