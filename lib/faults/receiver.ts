/**
 * A faulty receiver: a receiver's fault switches, as a decorator of its
 * handler (lib/inbox `Receiver` and `BatchReceiver`, the step from parsed
 * envelopes to the answer). The inbox has no branch for them.
 *
 * - `refuses`: the receiver answers 503 "<label> refuses deliveries" and
 *   applies nothing.
 * - `slow`: the receiver takes `slowMs` first (longer than the delivery
 *   timeout), then applies as usual.
 * - `skipsInbox` (test only): the receiver forgets which messages it has
 *   seen. Each message goes on under a fresh id, which no inbox row can
 *   match, so a repeat is applied again; the answers name the ids that
 *   came. It exists so that a checker (`deno task drill`) can be shown to
 *   catch a doubled effect.
 */
import type { Envelope } from "../outbox/envelope.ts";
import { type FaultReader, isOn } from "./switches.ts";

export interface ReceiverFaults {
  /** For the answer: "Billing refuses deliveries". */
  label: string;
  /** The switch that makes the receiver answer 503. */
  refuses?: string;
  /** The switch that makes the receiver slow. */
  slow?: string;
  /** How long a slow receiver takes (default 6 s). */
  slowMs?: number;
  /**
   * The switch that makes the receiver skip its inbox check (default
   * {@link RECEIVER_FAULTS.skipsInbox}, one name that every receiver obeys).
   */
  skipsInbox?: string;
}

/** Fault switches every wrapped receiver obeys, whatever its own are. */
export const RECEIVER_FAULTS = {
  /** Test only: a repeat is taken as a new message and applied again. */
  skipsInbox: "skipsInbox",
} as const;

/** Whose work a receiver is given: one envelope, or a batch of one tenant. */
type Work = Envelope | readonly Envelope[];

/**
 * Wraps a receiver with its fault switches: the single endpoint's
 * (`Receiver`) and the batch endpoint's (`BatchReceiver`) alike. A batch
 * is refused or slowed as a whole, as one request.
 */
export function faultyReceiver(
  faults: FaultReader,
  switches: ReceiverFaults,
): <W extends Work>(
  receiver: (work: W) => Promise<Response>,
) => (work: W) => Promise<Response> {
  return (receiver) => async (work) => {
    const tenantId = "tenantId" in work
      ? work.tenantId
      : (work as readonly Envelope[])[0]?.tenantId;
    if (tenantId === undefined) return await receiver(work);
    const active = await faults([tenantId]);
    if (switches.refuses && isOn(active, tenantId, switches.refuses)) {
      return Response.json(
        { error: `${switches.label} refuses deliveries` },
        { status: 503 },
      );
    }
    if (switches.slow && isOn(active, tenantId, switches.slow)) {
      await new Promise((r) => setTimeout(r, switches.slowMs ?? 6000));
    }
    const skips = switches.skipsInbox ?? RECEIVER_FAULTS.skipsInbox;
    if (isOn(active, tenantId, skips)) return await forgetful(receiver, work);
    return await receiver(work);
  };
}

/**
 * `receiver` given `work` under fresh message ids, so that its inbox
 * cannot recognise a repeat; a batch's answer is given back under the ids
 * that came, as the consumer matches them.
 */
async function forgetful<W extends Work>(
  receiver: (work: W) => Promise<Response>,
  work: W,
): Promise<Response> {
  const fresh = (e: Envelope) => ({ ...e, messageId: crypto.randomUUID() });
  if ("messageId" in work) return await receiver(fresh(work as Envelope) as W);
  const batch = (work as readonly Envelope[]).map(fresh);
  const cameAs = new Map<string, string>(
    batch.map((e, i) => [
      e.messageId,
      (work as readonly Envelope[])[i].messageId,
    ]),
  );
  const response = await receiver(batch as unknown as W);
  if (response.status !== 200) return response;
  const body = await response.json() as {
    results: { messageId: string }[];
  };
  const results = body.results.map((r) => ({
    ...r,
    messageId: cameAs.get(r.messageId) ?? r.messageId,
  }));
  return Response.json({ ...body, results }, { status: 200 });
}
