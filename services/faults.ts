/**
 * The fault switches an operator can flip, per sandbox. Each name is read by
 * real code at run time: the relay (lib/relay), the consumers (lib/queue) or
 * a receiver's handler (lib/inbox).
 */
import { CONSUMER_FAULTS } from "../lib/queue/mod.ts";
import { RELAY_FAULTS } from "../lib/relay/mod.ts";
import { LABELS, RECEIVERS } from "./routing.ts";

export interface FaultInfo {
  name: string;
  label: string;
  description: string;
}

export const FAULTS: readonly FaultInfo[] = [
  ...RECEIVERS.map((r) => ({
    name: `${r}Refuses`,
    label: `${LABELS[r]} refuses deliveries`,
    description: `${LABELS[r]} answers 503 to every delivery`,
  })),
  {
    name: "ordersRefuses",
    label: "Orders refuses payments",
    description:
      "The orders service answers 503 to PaymentSucceeded and PaymentFailed",
  },
  {
    name: "kitchenSlow",
    label: "Kitchen is slow",
    description:
      "The kitchen takes longer than the delivery timeout (it still applies)",
  },
  {
    name: RELAY_FAULTS.queueRefusesSends,
    label: "Queue refuses sends",
    description: "The relay's publish fails; messages wait in the outbox",
  },
  {
    name: RELAY_FAULTS.crashBeforeMark,
    label: "Relay crashes before marking",
    description:
      "The relay publishes, then stops before marking rows published",
  },
  {
    name: CONSUMER_FAULTS.lostAcks,
    label: "Acknowledgements are lost",
    description:
      "Receivers commit, then the consumer sees a failure and retries",
  },
  {
    name: CONSUMER_FAULTS.duplicateDeliveries,
    label: "Deliveries are sent twice",
    description: "Every delivery is posted twice in a row",
  },
];

export const FAULT_NAMES: readonly string[] = FAULTS.map((f) => f.name);
