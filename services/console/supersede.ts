/**
 * Supersede a poison message: the operator sends a corrected copy of a dead
 * letter's payload. It is checked against the event type's schema, the one
 * its receiver parses with (services/events.ts: strict at every depth, so
 * an unknown field is named, never dropped; real days, bounded quantities
 * and cents), so that what the receiver would refuse is a 400 before
 * anything is sent. It goes under a new message id to the same receiver,
 * and the dead letter is refused "superseded by <id>", linked to the copy
 * (lib/ledger/dead_letters.ts). The original envelope is never edited.
 *
 * A dead letter may have been applied after all (its acknowledgement was
 * lost, or it timed out and committed). Before a copy goes out, the
 * receiver's inbox is asked, as the receiver in a read-only transaction of
 * its own (no other role may read it): if it holds the dead letter, or a
 * message the dead letter stood in for, as applied, the answer is
 * {@link AlreadyApplied} and nothing changes. The question is a courtesy
 * to the operator; what decides is the receiver's own transaction, which
 * applies nothing for a copy of an applied message (lib/inbox).
 */
import { z } from "zod";
import type { Sql } from "../../lib/db/connect.ts";
import { asService, poolOf } from "../../lib/db/service.ts";
import { queueOfDelivery } from "../databases.ts";
import { SENDERS } from "../routing.ts";
import { appliedOf } from "../../lib/inbox/mod.ts";
import type { DeadLetters, Superseded } from "../../lib/ledger/mod.ts";
import { type EventType, payloads } from "../events.ts";
import { logAction } from "./actions.ts";

/** A corrected payload that does not fit its event type. */
export class InvalidPayload extends Error {
  override name = "InvalidPayload";
  constructor(readonly issues: { path: string; message: string }[]) {
    super(`${issues[0].path}: ${issues[0].message}`);
  }
}

/** The receiver has applied the dead letter (or what it stood in for). */
export class AlreadyApplied extends Error {
  override name = "AlreadyApplied";
  constructor(readonly receiver: string, readonly messageId: string) {
    super(`already applied: ${receiver} has message ${messageId} in its inbox`);
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
  // The receiver's own schema (services/events.ts), strict at every depth
  // and bounded as the receiver stores it: what it would refuse (422) is
  // refused here (400) before anything is sent.
  const result = (schema as z.ZodType<{ orderId: string }>).safeParse(
    payload,
  );
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
  return result.data as unknown as Record<string, unknown>;
}

interface DeadLetter {
  type: string;
  aggregate_id: string;
  subscriber: string;
  message_id: string;
  supersedes: string[] | null;
}

/** Dead letter `id` of the sandbox, read as the queue; undefined if none. */
async function deadLetter(sql: Sql, sandboxId: string, id: number) {
  const [dead] = await asService(
    sql,
    "queue",
    { tenantId: sandboxId },
    ({ sql }) =>
      sql<DeadLetter[]>`
        select d.type, d.aggregate_id, d.subscriber, d.message_id,
               m.envelope->'supersedes' as supersedes
          from queue.deliveries d
          join queue.messages m on m.message_id = d.message_id
         where d.id = ${id} and d.state = 'dead'`,
    { snapshot: true },
  );
  return dead as DeadLetter | undefined;
}

/**
 * Supersedes dead letter `id` of the sandbox with `payload`; null when it
 * is not a dead letter there. Throws InvalidPayload for a payload that does
 * not fit, and AlreadyApplied when the receiver's inbox holds the dead
 * letter (or a message it stood in for) as applied.
 */
export async function supersedeDeadLetter(
  sql: Sql,
  ctx: { sandboxId: string; actor: string; deadLetters: DeadLetters },
  id: number,
  payload: Record<string, unknown>,
  reason: string,
): Promise<Superseded | null> {
  const { sandboxId, actor } = ctx;
  // The queue that holds the dead letter: in split mode, the one its id
  // names (services/databases.ts); the copy goes to the same queue.
  const queue = poolOf(sql, queueOfDelivery(id) ?? SENDERS[0]);
  const dead = await deadLetter(queue, sandboxId, id);
  if (!dead) return null;
  const checked = check(dead.type, dead.aggregate_id, payload);
  // Subscribers are services: each reads its own inbox, `<name>.inbox`.
  const applied = await appliedOf(sql, dead.subscriber, sandboxId, [
    dead.message_id,
    ...(dead.supersedes ?? []).toReversed(),
  ]);
  if (applied) throw new AlreadyApplied(dead.subscriber, applied);
  return await asService(
    queue,
    "queue",
    { tenantId: sandboxId },
    async ({ sql }) => {
      // Still dead, or null: the supersede locks the row and checks again.
      const done = await ctx.deadLetters.supersedeIn(
        sql,
        sandboxId,
        id,
        checked,
        actor,
        reason,
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
    },
  );
}
