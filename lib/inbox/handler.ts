/**
 * A receiver as an HTTP handler: parse the envelope, obey the receiver's
 * fault switches, run `receive` in the receiver's own transaction, and answer
 * with the status that tells the consumer what to do.
 *
 * | answer | meaning                                    |
 * | ------ | ------------------------------------------ |
 * | 200    | applied now, or already applied before     |
 * | 400    | not an envelope                            |
 * | 409    | not yet (NotYet): retry later              |
 * | 422    | refused (Refused, malformed, horizon)      |
 * | 503    | the receiver refuses deliveries (fault)    |
 */
import type { Sql } from "../db/connect.ts";
import type { Logger } from "../log/mod.ts";
import { type FaultReader, isOn } from "../faults/mod.ts";
import { envelopeSchema } from "../outbox/envelope.ts";
import { NotYet } from "./errors.ts";
import { type Apply, receiveOnce } from "./receive.ts";

export interface InboxHandlerOptions {
  sql: Sql;
  /** The receiving service: its role, schema and inbox. */
  service: string;
  /** For answers: "Kitchen refuses deliveries". */
  label: string;
  apply: Apply;
  replayHorizonDays: number;
  /** Note order violations (ReceiveOptions.watchOrder). */
  watchOrder?: boolean;
  faults: FaultReader;
  log: Logger;
  /** Switch names: answer 503 / answer slowly. */
  refusesFault?: string;
  slowFault?: string;
  /** How long a slow receiver takes; longer than the delivery timeout. */
  slowMs?: number;
}

export function inboxHandler(options: InboxHandlerOptions) {
  return async (request: Request): Promise<Response> => {
    let raw: unknown;
    try {
      raw = await request.json();
    } catch {
      return json(400, { error: "malformed JSON" });
    }
    const parsed = envelopeSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return json(400, {
        error: `not an envelope: ${issue.path.join(".")}: ${issue.message}`,
      });
    }
    const envelope = parsed.data;
    const faults = await options.faults([envelope.sandboxId]);
    if (
      options.refusesFault &&
      isOn(faults, envelope.sandboxId, options.refusesFault)
    ) {
      return json(503, { error: `${options.label} refuses deliveries` });
    }
    if (
      options.slowFault && isOn(faults, envelope.sandboxId, options.slowFault)
    ) {
      await new Promise((r) => setTimeout(r, options.slowMs ?? 6000));
    }
    try {
      const result = await receiveOnce(
        options.sql,
        options.service,
        envelope,
        options.apply,
        {
          replayHorizonDays: options.replayHorizonDays,
          watchOrder: options.watchOrder,
        },
      );
      return json(result.status, {
        ...result.body,
        duplicate: result.duplicate,
      });
    } catch (error) {
      if (error instanceof NotYet) return json(409, { reason: error.message });
      options.log.error("receiver_error", {
        service: options.service,
        messageId: envelope.messageId,
        error,
      });
      return json(500, {
        error: `${options.label} failed: ${(error as Error).message}`,
      });
    }
  };
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}
