/**
 * What operations scrape and what browsers are told: `GET /metrics` in the
 * Prometheus text format after real traffic, and a Content-Security-Policy
 * on pages, probes, API answers and errors.
 */
import assert from "node:assert/strict";
import { CSP } from "../app.tsx";
import { RECEIVERS } from "../services/routing.ts";
import {
  deadLettersSettle,
  eventually,
  orderSettles,
  payVia,
  placeOrderVia,
  signIn,
  withTestBakery,
} from "./_app.ts";
import { inEveryQueue } from "./_console_ops.ts";
import { counted } from "../lib/ledger/audit.ts";

/** The samples of a Prometheus text body: "name{labels}" -> value. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

Deno.test("metrics: outbox, deliveries, dead letters and latency histograms after an order", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Metrics operator");
    const { orderId } = await placeOrderVia(client);
    await payVia(client, orderId);
    await orderSettles(client, orderId, "paid", 5_000);
    // And one dead letter: the kitchen refuses a second order.
    const put = await client.json("PUT", "/api/console/faults", {
      kitchenRefuses: true,
    });
    assert.equal(put.status, 200);
    await placeOrderVia(client);
    await deadLettersSettle(client, 1);

    // No session needed: Prometheus has none.
    const response = await fetch(new URL("/metrics", t.url));
    assert.equal(response.status, 200);
    assert.match(
      response.headers.get("content-type") ?? "",
      /^text\/plain; version=0\.0\.4/,
    );
    const text = await response.text();
    for (const name of ["bakery_outbox_pending", "bakery_deliveries"]) {
      assert.match(text, new RegExp(`^# TYPE ${name} gauge$`, "m"));
    }
    assert.match(text, /^# TYPE bakery_relay_lag_seconds histogram$/m);
    assert.match(text, /^# TYPE bakery_delivery_seconds histogram$/m);
    const m = samples(text);

    assert.equal(m.get('bakery_outbox_pending{service="orders"}'), 0);
    assert.equal(m.get('bakery_outbox_pending{service="billing"}'), 0);
    assert.equal(m.get('bakery_dead_letters{subscriber="kitchen"}'), 1);
    // Kitchen: OrderPlaced and OrderPaid of the first order done, the second
    // order's OrderPlaced dead; the others applied everything.
    assert.equal(
      m.get('bakery_deliveries{state="done",subscriber="kitchen"}'),
      2,
    );
    assert.equal(
      m.get('bakery_deliveries{state="dead",subscriber="kitchen"}'),
      1,
    );
    assert.equal(
      m.get('bakery_deliveries{state="done",subscriber="receipts"}'),
      1,
    );
    assert.equal(
      m.get('bakery_deliveries{state="done",subscriber="orders"}'),
      1,
    );
    assert.ok(
      m.has('bakery_outbox_oldest_ready_age_seconds{service="orders"}'),
    );

    // Histograms: buckets, +Inf equal to the count, every publish and every
    // done delivery observed.
    const lagOrders = m.get(
      'bakery_relay_lag_seconds_bucket{service="orders",le="+Inf"}',
    );
    // OrderPlaced twice, OrderPaid once.
    assert.equal(lagOrders, 3);
    assert.equal(
      m.get('bakery_relay_lag_seconds_count{service="orders"}'),
      lagOrders,
    );
    assert.equal(
      m.get('bakery_relay_lag_seconds_bucket{service="billing",le="+Inf"}'),
      1,
    );
    assert.ok(
      [...m.keys()].some((k) =>
        /^bakery_relay_lag_seconds_bucket\{service="orders",le="0\.\d+"\}$/
          .test(k)
      ),
    );
    for (const subscriber of RECEIVERS) {
      const done = m.get(
        `bakery_deliveries{state="done",subscriber="${subscriber}"}`,
      ) ?? 0;
      assert.equal(
        m.get(
          `bakery_delivery_seconds_bucket{subscriber="${subscriber}",le="+Inf"}`,
        ),
        done,
        subscriber,
      );
    }
    // Buckets are cumulative.
    const kitchenBuckets = [...m].filter(([k]) =>
      k.startsWith('bakery_delivery_seconds_bucket{subscriber="kitchen",')
    ).map(([, v]) => v);
    assert.ok(kitchenBuckets.length > 2);
    assert.deepEqual(kitchenBuckets, [...kitchenBuckets].sort((a, b) => a - b));

    // Done deliveries are counted from the closure audit's counters once it
    // has seen them: the same figures after the audit as the rows say.
    await eventually("the audit to count every done delivery", async () => {
      const open = await inEveryQueue(t.sql, (sql) =>
        sql<{ n: number }[]>`
          select count(*)::int as n from queue.deliveries d
           where d.state = 'done' and not ${counted(sql)}`);
      return open.every(({ n }) => n === 0);
    });
    const audited = samples(
      await (await fetch(new URL("/metrics", t.url)))
        .text(),
    );
    const rows = await inEveryQueue(
      t.sql,
      (sql) =>
        sql<{ subscriber: string; n: number }[]>`
        select subscriber, count(*)::int as n from queue.deliveries
         where state = 'done' group by 1`,
    );
    assert.equal(rows.length, RECEIVERS.length + 1);
    for (const { subscriber, n } of rows) {
      assert.equal(
        audited.get(
          `bakery_deliveries{state="done",subscriber="${subscriber}"}`,
        ),
        n,
        subscriber,
      );
    }
  });
});

Deno.test("CSP: pages, probes, API answers and errors carry the Content-Security-Policy", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const paths: [string, string, number][] = [
      ["GET", "/", 200],
      ["GET", "/health", 200],
      ["GET", "/metrics", 200],
      ["GET", "/api/menu", 200],
      ["GET", "/api/no-such-thing", 404],
      ["GET", "/no-such-page", 404],
      ["GET", "/api/console/closure", 401],
    ];
    for (const [method, path, status] of paths) {
      const response = await client.fetch(path, { method });
      await response.body?.cancel();
      assert.equal(response.status, status, path);
      const csp = response.headers.get("content-security-policy");
      assert.equal(csp, CSP, path);
      assert.equal(response.headers.get("x-content-type-options"), "nosniff");
    }
    // A CSRF refusal too.
    const evil = client.withOrigin("https://evil.example");
    const refused = await evil.fetch("/api/session", {
      method: "POST",
      json: { name: "Cross-site visitor" },
    });
    await refused.body?.cancel();
    assert.equal(refused.status, 403);
    assert.equal(refused.headers.get("content-security-policy"), CSP);

    // The policy itself: only this site's scripts, no inline code, no framing.
    const directives = new Map(
      CSP.split(";").map((d) => {
        const [name, ...values] = d.trim().split(/\s+/);
        return [name, values.join(" ")];
      }),
    );
    assert.equal(directives.get("default-src"), "'self'");
    assert.equal(directives.get("script-src"), "'self'");
    assert.equal(directives.get("object-src"), "'none'");
    assert.equal(directives.get("frame-ancestors"), "'none'");
    assert.doesNotMatch(CSP, /unsafe-inline|unsafe-eval|\*/);
  });
});
