/**
 * The order timeline as the order page shows it, computed from the
 * `orderView` read model (services/timeline.ts): one entry per message the
 * order caused, with the order's events that belong to it and one row per
 * receiver. Pure functions, so the server render, the browser and the tests
 * all agree on what is shown.
 */
import type { OrderView } from "../services/timeline.ts";

/** One message of the order (an outbox row of orders or billing). */
export type TimelineMessage = OrderView["messages"][number];
/** One delivery of a message to one subscriber. */
export type TimelineDelivery = OrderView["deliveries"][number];
/** One event in the order's own history. */
export type TimelineEvent = OrderView["events"][number];

/**
 * Which subscribers each event type goes to. The page passes the routing
 * table of services/routing.ts in the island's props, so the browser bundle
 * does not pull in the services.
 */
export type RoutingTable = Readonly<Record<string, readonly string[]>>;

/** The colour of a badge; each has a `.badge-<tone>` rule in style.css. */
export type Tone = "ok" | "warn" | "bad" | "info" | "muted";

/** What a badge says and how it looks. */
export interface BadgeSpec {
  tone: Tone;
  label: string;
}

/** One receiver of one message: its delivery, or null while still owed. */
export interface ReceiverRow {
  subscriber: string;
  delivery: TimelineDelivery | null;
}

/** One item of the timeline, oldest first. */
export interface TimelineEntry {
  /** Unique within the timeline, for Preact's keys. */
  key: string;
  type: string;
  at: string;
  /** Null for an event that sent no message the sandbox can see. */
  message: TimelineMessage | null;
  /** The order's events recorded with (or because of) this message. */
  events: TimelineEvent[];
  receivers: ReceiverRow[];
}

/** Delivery states after which nothing moves without an operator. */
const FINISHED = new Set(["done", "dead", "refused"]);

/**
 * Builds the timeline: every message with its receivers (those the routing
 * table names, then any other that got a delivery), the events attached to
 * the message of the same id, and events without a message on their own.
 */
export function timelineEntries(
  view: OrderView,
  routing: RoutingTable,
): TimelineEntry[] {
  const messageIds = new Set(view.messages.map((m) => m.messageId));
  const entries: TimelineEntry[] = view.messages.map((message) => {
    const deliveries = view.deliveries.filter((d) =>
      d.messageId === message.messageId
    );
    const expected = routing[message.eventType] ?? [];
    const extra = deliveries.map((d) => d.subscriber)
      .filter((s) => !expected.includes(s));
    return {
      key: message.messageId,
      type: message.eventType,
      at: message.createdAt,
      message,
      events: view.events.filter((e) => e.messageId === message.messageId),
      receivers: [...expected, ...new Set(extra)].map((subscriber) => ({
        subscriber,
        delivery: deliveries.find((d) => d.subscriber === subscriber) ?? null,
      })),
    };
  });
  view.events.forEach((event, index) => {
    if (event.messageId && messageIds.has(event.messageId)) return;
    entries.push({
      key: `event-${index}`,
      type: event.type,
      at: event.at,
      message: null,
      events: [event],
      receivers: [],
    });
  });
  // ISO strings of one clock sort as times; sort() is stable, so a message
  // and an event of the same millisecond keep the order they came in.
  return entries.sort((a, b) => a.at < b.at ? -1 : a.at > b.at ? 1 : 0);
}

/**
 * True when nothing about the order will change without someone acting: it
 * is paid or cancelled, every message is published, every routed receiver
 * has its delivery, and every delivery is done, dead or refused.
 */
export function isSettled(view: OrderView, routing: RoutingTable): boolean {
  if (view.state !== "paid" && view.state !== "cancelled") return false;
  return timelineEntries(view, routing).every((entry) =>
    (!entry.message || entry.message.state === "published") &&
    entry.receivers.every((r) => r.delivery && FINISHED.has(r.delivery.state))
  );
}

/** The badge of the order's state. */
export function orderStateBadge(state: string): BadgeSpec {
  switch (state) {
    case "placed":
      return { tone: "warn", label: "Placed" };
    case "payment_failed":
      return { tone: "bad", label: "Payment failed" };
    case "paid":
      return { tone: "ok", label: "Paid" };
    case "cancelled":
      return { tone: "muted", label: "Cancelled" };
    default:
      return { tone: "muted", label: state };
  }
}

/** The badge of a message's outbox row. */
export function outboxBadge(message: TimelineMessage): BadgeSpec {
  switch (message.state) {
    case "published":
      return { tone: "ok", label: "published" };
    case "claimed":
      return { tone: "info", label: "publishing" };
    case "pending":
      return message.attempts > 0
        ? { tone: "bad", label: "publish failed, retrying" }
        : { tone: "warn", label: "in outbox" };
    default:
      return { tone: "muted", label: message.state };
  }
}

/** The badge of one receiver's delivery; null means not published yet. */
export function deliveryBadge(delivery: TimelineDelivery | null): BadgeSpec {
  if (!delivery) return { tone: "muted", label: "not sent yet" };
  switch (delivery.state) {
    case "done":
      return { tone: "ok", label: "done" };
    case "pending":
      return delivery.attempts > 0
        ? { tone: "warn", label: "retrying" }
        : { tone: "info", label: "queued" };
    case "in_flight":
      return { tone: "info", label: "delivering" };
    case "dead":
      return { tone: "bad", label: "dead letter" };
    case "refused":
      return { tone: "muted", label: "refused" };
    default:
      return { tone: "muted", label: delivery.state };
  }
}

/** How many of an entry's receivers are done, e.g. `{ done: 5, of: 6 }`. */
export function doneCount(entry: TimelineEntry): { done: number; of: number } {
  return {
    done: entry.receivers.filter((r) => r.delivery?.state === "done").length,
    of: entry.receivers.length,
  };
}

// A receiver answers with a small object ({ card: "confirmed" }); anything
// longer is cut so one odd answer cannot stretch the timeline.
const MAX_OUTCOME = 120;

/**
 * A receiver's answer in one line: `{ card: "confirmed", lines: 2 }` reads
 * `card: confirmed · lines: 2`.
 */
export function describeOutcome(outcome: unknown): string {
  if (outcome === null || outcome === undefined) return "";
  const text = typeof outcome === "object" && !Array.isArray(outcome)
    ? Object.entries(outcome as Record<string, unknown>)
      .map(([key, value]) =>
        `${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`
      ).join(" · ")
    : typeof outcome === "string"
    ? outcome
    : JSON.stringify(outcome);
  return text.length > MAX_OUTCOME
    ? `${text.slice(0, MAX_OUTCOME - 1)}…`
    : text;
}

/** What a person reads for an event type; unknown types read as they are. */
export const EVENT_TITLES: Readonly<Record<string, string>> = {
  OrderPlaced: "Order placed",
  PaymentSucceeded: "Payment received",
  PaymentFailed: "Payment declined",
  OrderPaid: "Order paid",
  OrderCancelled: "Order cancelled",
  SecondPaymentReceived: "A second payment arrived, to be refunded",
  PaymentAfterCancel: "Paid after cancelling, to be refunded",
};
