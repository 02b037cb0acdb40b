/**
 * Deliveries by state, live: tabs with counts, and one row per delivery with
 * a link to its attempt history. Twin of `GET /api/console/deliveries?state=`.
 * Retrying rows count down to their next attempt.
 */
import {
  badgeClass,
  deliveryLabel,
  deliveryTone,
  formatAge,
  formatWhen,
  secondsUntil,
  serviceLabel,
} from "../format.ts";
import { useLive, useNow } from "./_live.ts";
import type { DeliveriesData, DeliveryItem } from "./_console_types.ts";
import { OrderCode } from "./_order_code.tsx";
import { HeldBehind } from "./_held_behind.tsx";

/** The tabs: `state` query values ("" for all) and their words. */
export const DELIVERY_TABS = [
  { state: "", label: "All" },
  { state: "pending", label: "Pending" },
  { state: "in_flight", label: "In flight" },
  { state: "retrying", label: "Retrying" },
  { state: "held", label: "Held" },
  { state: "dead", label: "Dead" },
  { state: "refused", label: "Refused" },
  { state: "done", label: "Done" },
] as const;

/** A tab's `state` value. */
export type DeliveryTab = typeof DELIVERY_TABS[number]["state"];

/** Props: the open tab and the server's render of its twin. */
export interface DeliveriesListProps {
  state: DeliveryTab;
  initial: DeliveriesData;
}

function countOf(counts: Record<string, number>, state: DeliveryTab): number {
  if (state !== "") return counts[state] ?? 0;
  // "retrying" is a part of "pending", so it is not added again.
  return ["pending", "in_flight", "held", "done", "dead", "refused"]
    .reduce((n, s) => n + (counts[s] ?? 0), 0);
}

/** Tabs and the deliveries of the open one. */
export default function DeliveriesList(props: DeliveriesListProps) {
  const src = `/api/console/deliveries${
    props.state ? `?state=${props.state}` : ""
  }`;
  const live = useLive(src, props.initial);
  const now = useNow();
  const { counts, items } = live.data.value;

  return (
    <div class="deliveries">
      <nav class="tabs" aria-label="Delivery states">
        {DELIVERY_TABS.map((tab) => (
          <a
            key={tab.state}
            href={tab.state
              ? `/console/deliveries?state=${tab.state}`
              : "/console/deliveries"}
            aria-current={tab.state === props.state ? "page" : undefined}
            data-testid={`tab-${tab.state || "all"}`}
          >
            {tab.label}{" "}
            <span class="count" data-testid="tab-count">
              {countOf(counts, tab.state)}
            </span>
          </a>
        ))}
      </nav>
      {live.error.value && <p class="form-error">{live.error.value}</p>}
      {items.length === 0
        ? (
          <p class="muted panel" data-testid="deliveries-empty">
            No deliveries in this state.
          </p>
        )
        : (
          <div class="table-wrap" tabIndex={0}>
            <table class="table cards compact" data-testid="deliveries-table">
              <thead>
                <tr>
                  <th>#</th>
                  <th>Event type</th>
                  <th>Receiver</th>
                  <th>Order</th>
                  <th>State</th>
                  <th class="num">Attempts</th>
                  <th class="num">Last status</th>
                  <th>Last error</th>
                  <th>When</th>
                </tr>
              </thead>
              <tbody>
                {items.map((d) => <Row key={d.id} d={d} now={now} />)}
              </tbody>
            </table>
          </div>
        )}
    </div>
  );
}

function Row({ d, now }: { d: DeliveryItem; now: number | null }) {
  // data-label: what a cell is, for the cards a phone shows instead of the
  // table (static/style.css, "Layout: overview, cards").
  return (
    <tr data-testid={`delivery-row-${d.id}`} data-state={d.state}>
      <td data-label="#">
        <a href={`/console/deliveries/${d.id}`} data-testid="delivery-link">
          {d.id}
        </a>
      </td>
      <td data-label="Event type">{d.eventType}</td>
      <td data-label="Receiver">{serviceLabel(d.subscriber)}</td>
      <td data-label="Order">
        <OrderCode id={d.orderId} />
      </td>
      <td data-label="State">
        <span class={badgeClass(deliveryTone(d.state, d.attempts))}>
          {deliveryLabel(d.state, d.attempts)}
        </span>
        {d.heldBehind !== null && <HeldBehind id={d.heldBehind} />}
        {d.redrives > 0 && (
          <>
            {" "}
            <span class="badge" title="Redriven by an operator">
              redriven {d.redrives}×
            </span>
          </>
        )}
      </td>
      <td class="num" data-label="Attempts">{d.attempts}</td>
      <td class="num" data-label="Last status">{d.lastStatus ?? "–"}</td>
      <td class="error-text" data-label="Last error">
        {d.state === "refused" && d.refusedReason
          ? `Refused by ${d.refusedBy}: ${d.refusedReason}`
          : d.lastError ?? "–"}
      </td>
      <td class="when" data-label="When">
        <When d={d} now={now} />
      </td>
    </tr>
  );
}

/** A time that wraps before itself, never inside ("next" / "04:10:06 UTC"). */
function At({ iso }: { iso: string | null }) {
  return <span class="nowrap">{formatWhen(iso)}</span>;
}

function When({ d, now }: { d: DeliveryItem; now: number | null }) {
  if (d.nextAttemptAt && d.state === "pending") {
    const left = now === null ? null : secondsUntil(d.nextAttemptAt, now);
    return (
      <span title="Next attempt">
        next <At iso={d.nextAttemptAt} />
        {left !== null && left > 0 && (
          <>
            {" "}
            <span class="muted nowrap">{`in ${formatAge(left)}`}</span>
          </>
        )}
      </span>
    );
  }
  if (d.state === "dead") {
    return (
      <span>
        dead <At iso={d.deadAt} />
      </span>
    );
  }
  if (d.state === "refused") {
    return (
      <span>
        refused <At iso={d.refusedAt} />
      </span>
    );
  }
  return <At iso={d.createdAt} />;
}
