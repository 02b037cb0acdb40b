/**
 * The fault switches an operator can flip, per sandbox. Each name is read at
 * run time by a decorator of lib/faults: of the transport the relay
 * publishes to, of the dispatcher the consumers send through, or of a
 * receiver's handler.
 */
import { CONSUMER_FAULTS, RELAY_FAULTS } from "../lib/faults/mod.ts";
import { LABELS, RECEIVERS } from "./routing.ts";
import { KITCHEN_KEEPS_ORDER } from "./receivers/endpoints.ts";

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
    name: KITCHEN_KEEPS_ORDER,
    label: "Kitchen keeps each order's sequence",
    description:
      "While one of an order's deliveries to the kitchen is dead, its later ones are held behind it instead of dying in turn; redriving or refusing the dead one lets them go",
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
  {
    // One receiver, so that a drill shows the checker finding exactly the
    // effects that lost their guard (receivers/endpoints.ts names it).
    name: "crmSkipsInbox",
    label: "CRM skips its inbox check (test only)",
    description:
      "CRM takes every copy as a new message, so a repeat is applied again: what deno task drill must catch",
  },
];

export const FAULT_NAMES: readonly string[] = FAULTS.map((f) => f.name);
