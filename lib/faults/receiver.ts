/**
 * A faulty receiver: a receiver's fault switches, as a decorator of its
 * handler (lib/inbox `Receiver`, the step from a parsed envelope to the
 * answer). The inbox has no branch for them.
 *
 * - `refuses`: the receiver answers 503 "<label> refuses deliveries" and
 *   applies nothing.
 * - `slow`: the receiver takes `slowMs` first (longer than the delivery
 *   timeout), then applies as usual.
 */
import type { Receiver } from "../inbox/handler.ts";
import { type FaultReader, isOn } from "./switches.ts";

export interface ReceiverFaults {
  /** For the answer: "Kitchen refuses deliveries". */
  label: string;
  /** The switch that makes the receiver answer 503. */
  refuses?: string;
  /** The switch that makes the receiver slow. */
  slow?: string;
  /** How long a slow receiver takes (default 6 s). */
  slowMs?: number;
}

/** Wraps a receiver with its fault switches. */
export function faultyReceiver(
  faults: FaultReader,
  switches: ReceiverFaults,
): (receiver: Receiver) => Receiver {
  return (receiver) => async (envelope) => {
    const { sandboxId } = envelope;
    const active = await faults([sandboxId]);
    if (switches.refuses && isOn(active, sandboxId, switches.refuses)) {
      return Response.json(
        { error: `${switches.label} refuses deliveries` },
        { status: 503 },
      );
    }
    if (switches.slow && isOn(active, sandboxId, switches.slow)) {
      await new Promise((r) => setTimeout(r, switches.slowMs ?? 6000));
    }
    return await receiver(envelope);
  };
}
