/**
 * Sending a batch: the deliveries of one tenant to one subscriber, in one
 * request to its `batchUrl`, in claim order. The subscriber applies them in
 * one transaction of its own and answers each (lib/inbox `receiveBatch`):
 *
 * ```
 * POST batchUrl  { "messages": [envelope, ...] }
 * 200            { "results": [{ "messageId", "status", "body" }, ...] }
 * ```
 *
 * Each result is judged as the answer to a request of its own would be
 * (classify.ts). A request that fails as a whole (any other status, a
 * timeout, an answer lost on its way back) is every delivery's outcome:
 * they are all retried, and the receiver's inbox answers the ones it had
 * applied.
 */
import type { Outcome } from "./classify.ts";
import type { AttemptResult, ClaimedDelivery } from "../ledger/delivery.ts";
import { exchange, judge, parsed, reasonIn } from "./exchange.ts";
import type { SendOptions } from "./send.ts";
import { batchAnswerSchema } from "../outbox/envelope.ts";

/** Sends `group` (one tenant, one subscriber) as one batch request. */
export async function attemptBatch(
  options: SendOptions,
  group: ClaimedDelivery[],
): Promise<AttemptResult[]> {
  const subscriber = options.subscribers[group[0].subscriber];
  const startedAt = new Date();
  const t0 = performance.now();
  const { outcome, text } = await exchange(options, subscriber.batchUrl!, {
    headers: { "x-batch-size": String(group.length) },
    body: JSON.stringify({ messages: group.map((d) => d.envelope) }),
  });
  const took = performance.now() - t0;
  const outcomes = outcomesOf(group, outcome, text);
  return group.map((d) =>
    judge(options, d, outcomes.get(d.messageId)!, startedAt, took)
  );
}

/** Each delivery's outcome, by message id. */
function outcomesOf(
  group: ClaimedDelivery[],
  outcome: Outcome,
  text: string,
): Map<string, Outcome> {
  const each = (o: Outcome) => new Map(group.map((d) => [d.messageId, o]));
  if (outcome.kind !== "answered") return each(outcome);
  const body = parsed(text);
  if (outcome.status !== 200) {
    return each({ ...outcome, reason: reasonIn(body, outcome.status) });
  }
  const answer = batchAnswerSchema.safeParse(body);
  if (!answer.success) {
    return each({
      kind: "network",
      message: "the batch's answer is not a list of results",
    });
  }
  const byId = new Map(answer.data.results.map((r) => [r.messageId, r]));
  return new Map(group.map((d) => {
    const r = byId.get(d.messageId);
    const one: Outcome = r
      ? {
        kind: "answered",
        status: r.status,
        reason: reasonIn(r.body, r.status),
      }
      : {
        kind: "network",
        message: "the batch's answer left this message out",
      };
    return [d.messageId, one];
  }));
}
