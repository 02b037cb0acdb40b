/**
 * How the pages print money, ages, times and states. Pure functions, shared
 * by the server render and the islands, so that the first browser render
 * prints exactly what the server printed (hydration compares the two). It
 * imports neither side: components/ and islands/ both read it. Money is
 * written out by hand rather than with Intl so that the server and every
 * browser print the same characters.
 */
import type { ClosureState } from "./services/console/closure.ts";
import type { SubscriberName } from "./services/routing.ts";

/**
 * An age in seconds, short and whole: `<1 s`, `42 s`, `3 min 05 s`,
 * `2 h 10 min`, `3 d 4 h`. Whole seconds, because the console ticks once a
 * second; a null age (nothing pending) prints as a dash.
 *
 * @example
 * ```ts
 * formatAge(185.4); // "3 min 05 s"
 * ```
 */
export function formatAge(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !isFinite(seconds)) {
    return "–";
  }
  const s = Math.max(0, Math.floor(seconds));
  if (s < 1) return "<1 s";
  if (s < 60) return `${s} s`;
  if (s < 3600) {
    return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
  }
  if (s < 86400) {
    return `${Math.floor(s / 3600)} h ${Math.floor(s % 3600 / 60)} min`;
  }
  return `${Math.floor(s / 86400)} d ${Math.floor(s % 86400 / 3600)} h`;
}

/**
 * The console's one way to write an instant: in UTC, which the logs use and
 * the server knows (it does not know the operator's zone); the time alone
 * when the instant is today (UTC), `2026-11-30 03:59:12 UTC` when it is
 * not. `nowMs` is for tests; pages use the clock.
 *
 * @example
 * ```ts
 * formatWhen("2026-11-30T03:59:12.684Z"); // "03:59:12 UTC" on that day
 * ```
 */
export function formatWhen(
  iso: string | null | undefined,
  nowMs: number = Date.now(),
): string {
  if (!iso) return "–";
  const today = new Date(nowMs).toISOString().slice(0, 10);
  const time = `${iso.slice(11, 19)} UTC`;
  return iso.slice(0, 10) === today ? time : `${iso.slice(0, 10)} ${time}`;
}

/**
 * How people read each service's name, receivers and senders alike: on
 * every page, in every table, list and sentence ("Kitchen answered 503").
 * The ids (`kitchen`, `crm`) stay in URLs, test ids and the JSON twins.
 * Kept here, not beside the routing table, so that the islands' bundle
 * takes the labels without the services.
 */
export const SERVICE_LABELS = {
  kitchen: "Kitchen",
  schedule: "Schedule",
  dispatch: "Dispatch",
  crm: "CRM",
  customers: "Customers",
  receipts: "Receipts",
  orders: "Orders",
  billing: "Billing",
} as const satisfies Record<SubscriberName | "billing", string>;

/**
 * The label of a service, receiver or sender; any other name as it is.
 *
 * @example
 * ```ts
 * serviceLabel("crm"); // "CRM"
 * ```
 */
export function serviceLabel(name: string): string {
  return Object.hasOwn(SERVICE_LABELS, name)
    ? SERVICE_LABELS[name as keyof typeof SERVICE_LABELS]
    : name;
}

/** The colour of a badge: `.badge-ok`, `.badge-warn`, `.badge-bad`, or plain. */
export type Tone = "ok" | "warn" | "bad" | "plain";

/** The badge class for a tone. */
export function badgeClass(tone: Tone): string {
  return tone === "plain" ? "badge" : `badge badge-${tone}`;
}

/** How a delivery state reads and looks. */
export function deliveryTone(state: string, attempts = 0): Tone {
  if (state === "done") return "ok";
  if (state === "dead") return "bad";
  if (state === "refused") return "plain";
  if (state === "held") return "warn";
  return attempts > 0 ? "warn" : "plain";
}

/** The words for a delivery state: `in flight`, `retrying`, ... */
export function deliveryLabel(state: string, attempts = 0): string {
  if (state === "pending" && attempts > 0) return "retrying";
  return state.replace("_", " ");
}

/**
 * The code customers quote for an order: the last 6 hex digits of its id,
 * upper case, the same that ends the receipt's number. The tail, not the
 * head: ids are UUIDv7, whose first 12 digits are the time, so orders of
 * the same minute share their head and differ in their random tail.
 *
 * @example
 * ```ts
 * orderCode("01a22a9b-552c-77bf-8b34-aa367361b797"); // "61B797"
 * ```
 */
export function orderCode(id: string | null | undefined): string {
  return id ? id.slice(-6).toUpperCase() : "–";
}

/**
 * Enough of a message id to tell rows apart on a screen: its last 8 hex
 * digits after an ellipsis (the random part of a UUIDv7; its head is the
 * time, the same for every message of a minute).
 *
 * @example
 * ```ts
 * idTail("01a22a9b-552c-77bf-8b34-aa367361b797"); // "…7361b797"
 * ```
 */
export function idTail(id: string | null | undefined): string {
  if (!id) return "–";
  return `…${id.slice(-8)}`;
}

/**
 * Seconds until an ISO instant, from `nowMs`: a countdown for a scheduled
 * retry. Negative means due.
 */
export function secondsUntil(iso: string, nowMs: number): number {
  return (Date.parse(iso) - nowMs) / 1000;
}

/**
 * The closure states in matrix order, with a label and what each means
 * (services/console/closure.ts has the full table). A copy of the state
 * list, because the browser bundle must not import the read model; the
 * `satisfies` below fails to compile when the two drift apart.
 */
export const CLOSURE_WORDS = {
  owed: {
    label: "Owed",
    tone: "warn",
    help: "In a sender's outbox, not yet published to the queue.",
  },
  inFlight: {
    label: "In flight",
    tone: "warn",
    help:
      "Published; the delivery is pending or under way and the receiver's inbox has no row yet.",
  },
  acceptedUnacked: {
    label: "Accepted, unacked",
    tone: "warn",
    help:
      "The receiver's inbox holds the message but the delivery is not done: the acknowledgement was lost. The next delivery closes it.",
  },
  closed: {
    label: "Closed",
    tone: "ok",
    help: "Delivered, acknowledged, and in the receiver's inbox.",
  },
  dead: {
    label: "Dead",
    tone: "bad",
    help:
      "Retries exhausted or refused by the receiver; waits for an operator to redrive or refuse it.",
  },
  refused: {
    label: "Refused",
    tone: "plain",
    help: "Closed by an operator, with a reason and a name.",
  },
  mismatch: {
    label: "Mismatch",
    tone: "bad",
    help:
      "Acknowledged, but the receiver's inbox has no row: an acknowledgement with no effect behind it. Must stay zero.",
  },
} as const satisfies Record<
  ClosureState,
  { label: string; tone: Tone; help: string }
>;

/** The closure states, in the order the matrix shows them. */
export const CLOSURE_KEYS = Object.keys(CLOSURE_WORDS) as (
  keyof typeof CLOSURE_WORDS
)[];

/**
 * A number with thousands separators, rounded to `decimals` places and
 * written without trailing zeros: `5,494`, `22.3`, `3`. By hand, as the
 * euros below, so that the server and every browser print the same.
 *
 * @example
 * ```ts
 * formatNumber(5493.67); // "5,494"
 * formatNumber(22.333, 1); // "22.3"
 * ```
 */
export function formatNumber(n: number, decimals = 0): string {
  const scale = 10 ** decimals;
  const rounded = Math.round(Math.abs(n) * scale) / scale;
  const [whole, part] = String(rounded).split(".");
  const sign = n < 0 && rounded !== 0 ? "−" : "";
  const grouped = whole.replace(/\B(?=(\d{3})+$)/g, ",");
  return part ? `${sign}${grouped}.${part}` : `${sign}${grouped}`;
}

/**
 * Formats integer cents as euros.
 *
 * @example
 * ```ts
 * formatEuros(1234); // "€12.34"
 * ```
 */
export function formatEuros(cents: number): string {
  const sign = cents < 0 ? "−" : "";
  const abs = Math.abs(Math.round(cents));
  const euros = Math.floor(abs / 100).toString()
    .replace(/\B(?=(\d{3})+$)/g, ",");
  return `${sign}€${euros}.${String(abs % 100).padStart(2, "0")}`;
}
