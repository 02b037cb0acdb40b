/**
 * A faulty receiver: a receiver's fault switches, as a decorator of its
 * handler (lib/inbox `Receiver` and `BatchReceiver`, the step from parsed
 * envelopes to the answer). The inbox has no branch for them.
 *
 * - `refuses`: the receiver answers 503 "<label> refuses deliveries" and
 *   applies nothing.
 * - `slow`: the receiver takes `slowMs` first (longer than the delivery
 *   timeout), then applies as usual.
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
}

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
    return await receiver(work);
  };
}
