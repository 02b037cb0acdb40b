/**
 * The order page's pure parts: the timeline built from `orderView`, when an
 * order counts as settled (which ends the polling fallback), the card checks
 * of the test checkout, and the time formats.
 */
import assert from "node:assert/strict";
import { h } from "preact";
import { renderToString } from "preact-render-to-string";
import type { OrderView } from "../services/timeline.ts";
import { ROUTING } from "../services/routing.ts";
import {
  describeOutcome,
  isSettled,
  timelineEntries,
} from "../islands/_timeline.ts";
import {
  checkCard,
  checkCvc,
  checkExpiry,
  groupCard,
} from "../islands/_card.ts";
import { clock, span } from "../islands/_time.ts";
import PayForm from "../islands/pay_form.tsx";

const PLACED = "01a22a9b-5535-7644-8caa-1ce3bf4ebb28";
const SUCCEEDED = "01a22a9b-59e5-7573-bca6-47ea07336f69";
const PAID = "01a22a9b-59fd-7112-bc61-2cf2206f139d";
const at = (ms: number) =>
  new Date(Date.UTC(2026, 10, 30, 4, 0, 0, ms)).toISOString();

function delivery(
  id: number,
  messageId: string,
  eventType: string,
  subscriber: string,
  state = "done",
) {
  return {
    id,
    messageId,
    eventType,
    subscriber,
    state,
    attempts: 1,
    lastStatus: 200,
    lastError: null,
    nextAttemptAt: null,
    accepted: state === "done"
      ? { status: 200, at: at(500 + id), outcome: { ok: true } }
      : null,
  };
}

/** A paid order with every delivery done, as orderView returns it. */
function paidView(): OrderView {
  const message = (
    messageId: string,
    service: string,
    eventType: string,
    ms: number,
  ) => ({
    messageId,
    service,
    eventType,
    state: "published",
    attempts: 0,
    lastError: null,
    createdAt: at(ms),
    publishedAt: at(ms + 20),
    traceId: null,
  });
  return {
    orderId: "01a22a9b-552c-77bf-8b34-aa367361b797",
    state: "paid",
    version: 2,
    totalCents: 1350,
    customer: { name: "Ada", email: "ada@example.com" },
    fulfilment: "delivery",
    day: "2026-11-30",
    paymentRef: "pi_test_1",
    createdAt: at(0),
    lines: [],
    events: [
      { type: "OrderPlaced", version: 1, at: at(0), messageId: PLACED },
      { type: "OrderPaid", version: 2, at: at(300), messageId: PAID },
    ],
    // Billing's message is older than OrderPaid but listed last: the
    // timeline sorts by time, not by the order of the lists.
    messages: [
      message(PLACED, "orders", "OrderPlaced", 0),
      message(PAID, "orders", "OrderPaid", 300),
      message(SUCCEEDED, "billing", "PaymentSucceeded", 200),
    ],
    deliveries: [
      ...["customers", "kitchen", "schedule"].map((s, i) =>
        delivery(i + 1, PLACED, "OrderPlaced", s)
      ),
      delivery(4, SUCCEEDED, "PaymentSucceeded", "orders"),
      ...["receipts", "crm", "kitchen", "schedule", "dispatch", "customers"]
        .map((s, i) => delivery(i + 5, PAID, "OrderPaid", s)),
    ],
    receipt: {
      number: "R-20261130-61B797",
      totalCents: 1350,
      paymentRef: "pi_test_1",
      issuedAt: at(400),
    },
    kitchenCard: { state: "confirmed", version: 2 },
  };
}

Deno.test("timeline: one entry per message, oldest first, receivers in routing order", () => {
  const entries = timelineEntries(paidView(), ROUTING);
  assert.deepEqual(entries.map((e) => e.type), [
    "OrderPlaced",
    "PaymentSucceeded",
    "OrderPaid",
  ]);
  assert.deepEqual(
    entries[2].receivers.map((r) => r.subscriber),
    ["kitchen", "schedule", "dispatch", "crm", "customers", "receipts"],
  );
  assert.deepEqual(entries[0].events.map((e) => e.version), [1]);
  assert.deepEqual(entries[1].events, []);
});

Deno.test("timeline: a routed receiver without a delivery is owed, and unsettled", () => {
  const view = paidView();
  assert.equal(isSettled(view, ROUTING), true);
  view.deliveries = view.deliveries.filter((d) => d.subscriber !== "receipts");
  const paid = timelineEntries(view, ROUTING)[2];
  assert.equal(
    paid.receivers.find((r) => r.subscriber === "receipts")?.delivery,
    null,
  );
  assert.equal(isSettled(view, ROUTING), false);
});

Deno.test("timeline: settled needs a final state and every delivery finished", () => {
  const placed = { ...paidView(), state: "placed" };
  assert.equal(isSettled(placed, ROUTING), false);
  const retrying = paidView();
  retrying.deliveries[0].state = "pending";
  assert.equal(isSettled(retrying, ROUTING), false);
  const dead = paidView();
  dead.deliveries[0].state = "dead";
  assert.equal(isSettled(dead, ROUTING), true);
  const unpublished = paidView();
  unpublished.messages[1].state = "pending";
  assert.equal(isSettled(unpublished, ROUTING), false);
});

Deno.test("timeline: an event without a visible message stands on its own", () => {
  const view = paidView();
  view.events.push({
    type: "SecondPaymentReceived",
    version: 2,
    at: at(900),
    messageId: null,
  });
  const last = timelineEntries(view, ROUTING).at(-1)!;
  assert.equal(last.type, "SecondPaymentReceived");
  assert.equal(last.message, null);
  assert.deepEqual(last.receivers, []);
});

Deno.test("timeline: outcomes read as one line, cut when long", () => {
  assert.equal(
    describeOutcome({ card: "confirmed", lines: 2 }),
    "card: confirmed · lines: 2",
  );
  assert.equal(describeOutcome(null), "");
  assert.equal(describeOutcome("ok"), "ok");
  assert.ok(describeOutcome({ text: "x".repeat(500) }).length <= 120);
});

Deno.test("card checks: Stripe's test cards pass, typos and past dates do not", () => {
  assert.equal(checkCard("4242 4242 4242 4242"), null);
  assert.equal(checkCard("4000-0000-0000-0002"), null);
  assert.match(checkCard("4242 4242 4242 4241")!, /typo/);
  assert.match(checkCard("")!, /Enter/);
  assert.match(checkCard("4242 abcd")!, /digits/);
  const now = new Date(2026, 10, 30);
  assert.equal(checkExpiry("11/26", now), null);
  assert.equal(checkExpiry("12/2030", now), null);
  assert.match(checkExpiry("10/26", now)!, /expired/);
  assert.match(checkExpiry("13/30", now)!, /month/);
  assert.match(checkExpiry("1230", now)!, /MM\/YY/);
  assert.equal(checkCvc("123"), null);
  assert.ok(checkCvc("12a"));
  assert.equal(groupCard("4242424242424242"), "4242 4242 4242 4242");
});

Deno.test("times: UTC on the server, short spans everywhere", () => {
  // As the console writes a time: the date too, when it is not today.
  const sameDay = Date.parse("2026-11-30T22:00:00Z");
  const nextDay = Date.parse("2026-12-01T01:00:00Z");
  assert.equal(clock(at(0), false, sameDay), "04:00:00 UTC");
  assert.equal(clock(at(0), false, nextDay), "2026-11-30 04:00:00 UTC");
  assert.equal(span(at(0), at(35)), "35 ms");
  assert.equal(span(at(0), at(1234)), "1.2 s");
  assert.equal(span(at(35), at(0)), "0 ms");
});

Deno.test("pay form: test mode lists the test cards; Stripe mode is one button", () => {
  const props = { orderId: "o", amountCents: 1350, version: 1 };
  const test = renderToString(h(PayForm, { ...props, mode: "test" }));
  assert.match(test, /4242 4242 4242 4242/);
  assert.match(test, /4000 0000 0000 0002/);
  assert.match(test, /Pay €13\.50/);
  const stripe = renderToString(h(PayForm, { ...props, mode: "stripe" }));
  assert.match(stripe, /Pay €13\.50 with Stripe/);
  assert.doesNotMatch(stripe, /id="card"/);
});
