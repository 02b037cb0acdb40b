/**
 * Supersede a poison message: the operator sends a corrected copy of a dead
 * letter's payload. It is checked against the event type's schema (strict:
 * an unknown field is named too, never dropped), goes under a new message id
 * to the same receiver, and the dead letter is refused "superseded by
 * <id>", linked to the copy (lib/queue/dead_letters.ts). The original
 * envelope is never edited.
 */
import { z } from "zod";
import type { Sql } from "../../lib/db/connect.ts";
import { asService } from "../../lib/db/service.ts";
import { type Superseded, supersedeIn } from "../../lib/queue/mod.ts";
import { type EventType, payloads } from "../events.ts";
import { logAction } from "./actions.ts";

/** A corrected payload that does not fit its event type. */
export class InvalidPayload extends Error {
  override name = "InvalidPayload";
  constructor(readonly issues: { path: string; message: string }[]) {
    super(`${issues[0].path}: ${issues[0].message}`);
  }
}

function check(
  type: string,
  aggregateId: string,
  payload: Record<string, unknown>,
): Record<string, unknown> {
  const schema = payloads[type as EventType];
  if (!schema) {
    throw new InvalidPayload([{
      path: "payload",
      message: `no schema for event type ${type}`,
    }]);
  }
  const result = (schema as z.ZodObject).strict().safeParse(payload);
  if (!result.success) {
    throw new InvalidPayload(
      result.error.issues.flatMap((i) =>
        i.code === "unrecognized_keys"
          ? i.keys.map((key) => ({
            path: ["payload", ...i.path, key].map(String).join("."),
            message: "unknown field",
          }))
          : [{
            path: ["payload", ...i.path].map(String).join("."),
            message: i.message,
          }]
      ),
    );
  }
  // The copy is about the same order: a payload of another would close
  // this order's obligation with someone else's message.
  if (result.data.orderId !== aggregateId) {
    throw new InvalidPayload([{
      path: "payload.orderId",
      message: `must be the order of the original message (${aggregateId})`,
    }]);
  }
  return result.data as Record<string, unknown>;
}

/**
 * Supersedes dead letter `id` of the sandbox with `payload`; null when it
 * is not a dead letter there. Throws InvalidPayload for a payload that does
 * not fit.
 */
export async function supersedeDeadLetter(
  sql: Sql,
  ctx: { sandboxId: string; actor: string; republish: boolean },
  id: number,
  payload: Record<string, unknown>,
  reason: string,
): Promise<Superseded | null> {
  const { sandboxId, actor } = ctx;
  return await asService(sql, "queue", { sandboxId }, async ({ sql }) => {
    const [dead] = await sql<{ type: string; aggregate_id: string }[]>`
      select type, aggregate_id from queue.deliveries
       where id = ${id} and state = 'dead'`;
    if (!dead) return null;
    const checked = check(dead.type, dead.aggregate_id, payload);
    const done = await supersedeIn(
      sql,
      sandboxId,
      id,
      checked,
      actor,
      reason,
      { republish: ctx.republish },
    );
    if (done) {
      await logAction(sql, sandboxId, {
        actor,
        action: "supersede",
        target: { id, messageId: done.messageId, reason },
        count: 1,
      });
    }
    return done;
  });
}
