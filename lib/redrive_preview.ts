/**
 * A redrive's preview: what redriving dead letters would do, each at its
 * receiver, found by running the receiver's real apply in a transaction
 * that is always rolled back (lib/inbox/preview.ts). The messaging object
 * offers it as `deadLetters.preview` (lib/messaging.ts).
 */
import type { Sql } from "./db/connect.ts";
import { type DeadLetters, deadMessages } from "./ledger/dead_letters.ts";
import type { Apply } from "./inbox/receive.ts";
import {
  type Preview,
  type PreviewOutcome,
  previewReceive,
} from "./inbox/preview.ts";

/** A receiver as a preview runs it. */
export interface PreviewReceiver {
  /** The pool of the receiver's database (its inbox and its effects). */
  sql: Sql;
  apply: Apply;
  replayHorizonDays: number;
}

/** One dead letter's preview: what its redrive would do at its receiver. */
export interface RedrivePreview {
  id: number;
  messageId: string;
  subscriber: string;
  outcome: PreviewOutcome;
  detail: string;
}

/** Dead letters as the messaging object offers them: with a preview. */
export interface OperatorDeadLetters extends DeadLetters {
  /**
   * What redriving `ids` would do, each at its receiver: the receiver's
   * real apply in a transaction that is always rolled back, so nothing
   * changes anywhere. `sql` is the pool of the ledger that holds them.
   */
  preview(
    sql: Sql,
    tenantId: string,
    ids: readonly number[],
    options?: { timeoutMs?: number },
  ): Promise<RedrivePreview[]>;
}

/**
 * Previews each dead letter of `ids` at its receiver, one after another
 * (each holds a transaction of its receiver's, rolled back at once).
 */
export async function previewRedrive(
  sql: Sql,
  tenantId: string,
  ids: readonly number[],
  options: {
    receivers: Readonly<Record<string, PreviewReceiver>>;
    timeoutMs?: number;
  },
): Promise<RedrivePreview[]> {
  const previews: RedrivePreview[] = [];
  for (const dead of await deadMessages(sql, tenantId, ids)) {
    const receiver = options.receivers[dead.subscriber];
    const preview: Preview = receiver
      ? await previewReceive(
        receiver.sql,
        dead.subscriber,
        dead.envelope,
        receiver.apply,
        {
          replayHorizonDays: receiver.replayHorizonDays,
          timeoutMs: options.timeoutMs,
        },
      )
      : { outcome: "fail", detail: "the receiver is not in this process" };
    previews.push({
      id: dead.id,
      messageId: dead.envelope.messageId,
      subscriber: dead.subscriber,
      ...preview,
    });
  }
  return previews;
}
