/**
 * The live part of an order's page: its state with what the visitor can do
 * next (pay, cancel), the receipt once paid, and the timeline of every
 * message with each receiver's delivery and inbox. It starts from the view
 * the server rendered and follows the order as it changes, without a reload.
 */
import { useSignal } from "@preact/signals";
import { useEffect, useRef } from "preact/hooks";
import type { OrderView } from "../services/timeline.ts";
import { postJson } from "./_api.ts";
import { type LiveStatus, type Watch, watchOrder } from "./_order_live.ts";
import { Badge, Receipt, Timeline } from "./_order_parts.tsx";
import {
  isSettled,
  orderStateBadge,
  type RoutingTable,
  timelineEntries,
} from "./_timeline.ts";

/** Props: the order as the server read it, and how to read its messages. */
export interface OrderTimelineProps {
  view: OrderView;
  /** Event type -> subscribers (services/routing.ts). */
  routing: RoutingTable;
  /** Service name -> how people read it ("crm" -> "CRM"). */
  labels: Readonly<Record<string, string>>;
  /**
   * Set when the visitor comes back from paying: the order's version when
   * the card was sent. Until the order moves past it, the page says the
   * payment is being confirmed instead of offering to pay again.
   */
  awaitingVersion?: number | null;
  /**
   * An operator is looking: times stay in UTC, as the console writes them,
   * instead of switching to the browser's zone.
   */
  utc?: boolean;
}

/** States in which an order can still be paid or cancelled. */
const OPEN = ["placed", "payment_failed"];

// A test-mode payment lands in about a second; after 30 s without news the
// page stops waiting and offers the buttons again.
const AWAIT_MS = 30_000;

const LIVE_TEXT: Record<LiveStatus, string> = {
  connecting: "Connecting…",
  live: "Live",
  reconnecting: "Reconnecting…",
  polling: "Checking every 2 s",
  idle: "Up to date",
  gone: "Not available any more",
};

const STATE_TEXT: Record<string, string> = {
  placed: "We have your order and the kitchen has pencilled it in. " +
    "Pay to confirm it.",
  payment_failed: "The card was declined and nothing was charged. " +
    "You can try again with another card.",
  paid: "Paid, thank you. The kitchen has your order; the receipt is below.",
  cancelled: "This order is cancelled. Nothing will be baked for it.",
};

/**
 * What is true of the order's deliveries, for the customer: which
 * receivers are being retried or could not take it (a dead letter), in
 * words, or null when nothing is wrong. The customer's page must not say
 * "the kitchen has your order" above a timeline where the kitchen refused.
 */
export function deliveryTrouble(v: OrderView): {
  text: string;
  receivers: string[];
} | null {
  const name = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
  const dead = [
    ...new Set(
      v.deliveries.filter((d) => d.state === "dead").map((d) => d.subscriber),
    ),
  ];
  const retrying = [
    ...new Set(
      v.deliveries.filter((d) =>
        (d.state === "pending" || d.state === "in_flight") && d.attempts > 0
      ).map((d) => d.subscriber),
    ),
  ].filter((s) => !dead.includes(s));
  if (dead.length === 0 && retrying.length === 0) return null;
  const list = (xs: string[]) =>
    xs.map(name).join(", ").replace(/, ([^,]*)$/, " and $1");
  const parts = [];
  if (dead.length) {
    parts.push(
      `${list(dead)} could not take your order yet. The bakery has been told ` +
        "and will send it again; nothing is lost.",
    );
  }
  if (retrying.length) {
    parts.push(
      `${list(retrying)} did not answer yet; we are trying again.`,
    );
  }
  return { text: parts.join(" "), receivers: [...dead, ...retrying] };
}

/** The order's state, actions, receipt and timeline, kept current. */
export default function OrderTimeline(props: OrderTimelineProps) {
  const view = useSignal(props.view);
  const live = useSignal<LiveStatus>("connecting");
  // Server HTML prints UTC; local times only after hydration (see _time.ts),
  // and never for an operator, who reads the console's UTC.
  const local = useSignal(false);
  const awaiting = useSignal(props.awaitingVersion ?? null);
  const confirming = useSignal(false);
  const busy = useSignal(false);
  const error = useSignal("");
  const watch = useRef<Watch | null>(null);

  useEffect(() => {
    local.value = !props.utc;
    // The marker has done its job once read; a reload should not keep it.
    const url = new URL(location.href);
    if (url.searchParams.has("awaiting")) {
      url.searchParams.delete("awaiting");
      history.replaceState(history.state, "", url);
    }
    const giveUp = setTimeout(() => awaiting.value = null, AWAIT_MS);
    watch.current = watchOrder({
      orderId: props.view.orderId,
      onView: (next) => view.value = next,
      onStatus: (status) => live.value = status,
      settled: () => isSettled(view.value, props.routing),
    });
    return () => {
      clearTimeout(giveUp);
      watch.current?.stop();
    };
  }, []);

  async function cancel() {
    if (busy.value) return;
    busy.value = true;
    error.value = "";
    try {
      const id = encodeURIComponent(view.value.orderId);
      const { status, body } = await postJson(`/api/orders/${id}/cancel`);
      if (status !== 202) {
        error.value = typeof body.error === "string"
          ? body.error
          : `The bakery answered ${status}. Please try again.`;
      }
      confirming.value = false;
      await watch.current?.refresh();
    } catch {
      error.value = "We could not reach the bakery. Please try again.";
    }
    busy.value = false;
  }

  const v = view.value;
  const open = OPEN.includes(v.state);
  const waiting = open && awaiting.value !== null &&
    v.version <= awaiting.value;
  const entries = timelineEntries(v, props.routing);
  const trouble = deliveryTrouble(v);

  return (
    <div class="order-live">
      <section class="panel order-status" aria-live="polite">
        <div class="status-line">
          <Badge
            spec={orderStateBadge(v.state)}
            state={v.state}
            testId="order-state"
          />
          <span class={`live live-${live.value}`} data-testid="live-status">
            {LIVE_TEXT[live.value]}
          </span>
        </div>
        <p class="status-text">
          {waiting
            ? "Confirming your payment with the bank…"
            : v.state === "paid" && trouble?.receivers.includes("kitchen")
            ? "Paid, thank you; the receipt is below."
            : STATE_TEXT[v.state] ?? `This order is ${v.state}.`}
        </p>
        {trouble && !waiting && (
          <p class="status-trouble" data-testid="order-delivery-trouble">
            {trouble.text}
          </p>
        )}
        {v.kitchenCard && (
          <p class="muted status-facts">
            Kitchen card: <strong>{v.kitchenCard.state}</strong>
          </p>
        )}
        {open && !waiting && (
          <div class="actions">
            {!confirming.value
              ? (
                <>
                  <a
                    class="button primary"
                    href={`/orders/${encodeURIComponent(v.orderId)}/pay`}
                  >
                    {v.state === "payment_failed" ? "Pay again" : "Pay"}
                  </a>
                  <button
                    type="button"
                    class="button"
                    onClick={() => confirming.value = true}
                  >
                    Cancel order
                  </button>
                </>
              )
              : (
                <div class="confirm" role="group" aria-label="Cancel order">
                  <span>Cancel this order? Nothing has been charged.</span>
                  <button
                    type="button"
                    class="button danger"
                    disabled={busy.value}
                    aria-busy={busy.value || undefined}
                    onClick={cancel}
                  >
                    {busy.value ? "Cancelling…" : "Yes, cancel it"}
                  </button>
                  <button
                    type="button"
                    class="button"
                    disabled={busy.value}
                    onClick={() => confirming.value = false}
                  >
                    Keep it
                  </button>
                </div>
              )}
          </div>
        )}
        {error.value && <p class="form-error" role="alert">{error.value}</p>}
      </section>
      <Receipt view={v} local={local.value} />
      <section class="order-timeline" aria-labelledby="timeline-title">
        <h2 id="timeline-title">What happened</h2>
        <p class="muted timeline-intro">
          Every message your order sent, and what each part of the bakery did
          with it: delivered, retried, and accepted into its inbox once.
        </p>
        <Timeline
          entries={entries}
          labels={props.labels}
          local={local.value}
        />
      </section>
    </div>
  );
}
