/**
 * What the console watches, through HTTP on the whole bakery: alerts by the
 * settings' thresholds, the receivers over the last hour (the charts' data),
 * order violations noted by the inboxes, each inside the caller's sandbox;
 * and the same alerts as Prometheus rules, checked by promtool together with
 * the app's /metrics.
 */
import assert from "node:assert/strict";
import {
  type Client,
  deadLettersSettle,
  eventually,
  orderSettles,
  payVia,
  placeOrderVia,
  signIn,
  withTestBakery,
} from "./_app.ts";
import { findOnPath } from "./_setup_tools.ts";
import { currentAlerts } from "../services/console/alerts.ts";
import { SUBSCRIBERS } from "../services/routing.ts";
import type {
  Alert,
  OrderViolations,
  ReceiverStats,
} from "../islands/_console_types.ts";

const PROMTOOL = findOnPath("promtool");
const promtoolMissing = PROMTOOL
  ? null
  : "no promtool on PATH (Debian: apt-get install prometheus)";
if (promtoolMissing) console.log(`skipped: ${promtoolMissing}`);

const RULES = new URL("../ops/prometheus/alerts.yml", import.meta.url);

/** Runs promtool with `args`, `input` on stdin; its exit code and output. */
async function promtool(args: string[], input?: string) {
  const child = new Deno.Command(PROMTOOL!, {
    args,
    stdin: input === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (input !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(input));
    await writer.close();
  }
  const out = await child.output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return {
    code: out.code,
    output: decode(out.stdout) + decode(out.stderr),
  };
}

async function alertsOf(client: Client): Promise<Alert[]> {
  const { status, body } = await client.json<{ alerts: Alert[] }>(
    "GET",
    "/api/console/alerts",
  );
  assert.equal(status, 200, JSON.stringify(body));
  return body.alerts;
}

async function receiversOf(client: Client): Promise<ReceiverStats[]> {
  const { status, body } = await client.json<{ receivers: ReceiverStats[] }>(
    "GET",
    "/api/console/receivers",
  );
  assert.equal(status, 200, JSON.stringify(body));
  return body.receivers;
}

const find = (alerts: Alert[], kind: string, subject: string) =>
  alerts.find((a) => a.kind === kind && a.subject === subject);

Deno.test({
  name: "promtool: the Prometheus rules check",
  ignore: promtoolMissing !== null,
  fn: async () => {
    const { code, output } = await promtool([
      "check",
      "rules",
      RULES.pathname,
    ]);
    assert.equal(code, 0, output);
    assert.match(output, /SUCCESS: 5 rules found/);
  },
});

// The workers' rules over made-up series: consume work waits with no live
// consumer (fires), relay work waits with a live relay (does not); a silent
// worker holding leases fires until they expire.
const WORKER_RULE_TESTS = (rules: string) => `
rule_files: [${JSON.stringify(rules)}]
evaluation_interval: 15s
tests:
  - interval: 15s
    input_series:
      - series: 'bakery_work_waiting{role="consume"}'
        values: '3 3 3'
      - series: 'bakery_work_waiting{role="relay"}'
        values: '5 5 5'
      - series: 'bakery_workers_live_by_role{role="consume"}'
        values: '0 0 0'
      - series: 'bakery_workers_live_by_role{role="relay"}'
        values: '1 1 1'
      - series: 'bakery_workers_silent_with_leases'
        values: '1 1 0'
    alert_rule_test:
      - eval_time: 15s
        alertname: BakeryNoLiveWorker
        exp_alerts:
          - exp_labels: { role: consume, severity: critical, kind: no_live_worker }
            exp_annotations:
              summary: "consume: 3 due and no live worker serves it"
              description: "No worker process with the consume role has beaten within three beats while its work waits (the Workers page lists them)."
      - eval_time: 15s
        alertname: BakerySilentWorker
        exp_alerts:
          - exp_labels: { severity: warning, kind: silent_worker }
            exp_annotations:
              summary: "1 silent worker(s) still holding leases"
              description: "A worker process stopped beating while it held leases; its rows are taken over when the leases expire (the Workers page names it)."
      - eval_time: 30s
        alertname: BakerySilentWorker
        exp_alerts: []
`;

Deno.test({
  name: "promtool: the workers' rules fire on the series they are for",
  ignore: promtoolMissing !== null,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    try {
      const file = `${dir}/workers_test.yml`;
      await Deno.writeTextFile(file, WORKER_RULE_TESTS(RULES.pathname));
      const { code, output } = await promtool(["test", "rules", file]);
      assert.equal(code, 0, output);
      assert.match(output, /SUCCESS/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("alerts and receivers: a dead letter raises dead_letters and success_rate (not under its minimum of attempts), refusing it clears dead_letters; the receivers show the hour; another sandbox sees none", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    const { sandboxId } = await signIn(client, "Watch operator");
    const other = t.client();
    await signIn(other, "Other operator");

    // A paid order, all applied: no alert, every receiver served.
    const { orderId } = await placeOrderVia(client);
    await payVia(client, orderId);
    await orderSettles(client, orderId, "paid");
    // Usually 2 attempts (a 409 retry if OrderPaid came first: then more).
    const before = (await receiversOf(client)).find((r) =>
      r.name === "kitchen"
    )!.attempts;
    assert.ok(before >= 2, String(before));
    const calm = await alertsOf(client);
    assert.equal(find(calm, "dead_letters", "kitchen"), undefined);
    assert.equal(calm.filter((a) => a.kind === "outbox_age").length, 0);

    // The kitchen refuses: a second order's OrderPlaced dies there.
    const put = await client.json("PUT", "/api/console/faults", {
      kitchenRefuses: true,
    });
    assert.equal(put.status, 200);
    await placeOrderVia(client);
    const [dead] = await deadLettersSettle(client, 1);
    const alerts = await alertsOf(client);
    assert.deepEqual(find(alerts, "dead_letters", "kitchen"), {
      kind: "dead_letters",
      subject: "kitchen",
      value: 1,
      threshold: 1,
      since: dead.deadAt,
    });
    // Kitchen: OrderPlaced and OrderPaid done, then 4 failed attempts.
    const attempts = before + 4;
    const rate = find(alerts, "success_rate", "kitchen");
    assert.ok(rate, JSON.stringify(alerts));
    assert.equal(rate.threshold, 0.9);
    assert.equal(rate.value, Math.round((2 / attempts) * 1000) / 1000);
    assert.equal(find(alerts, "success_rate", "receipts"), undefined);
    assert.deepEqual(await alertsOf(other), []);
    // Below ALERT_SUCCESS_MIN_ATTEMPTS, the same rate raises nothing.
    const fewer = await currentAlerts(t.sql, sandboxId, {
      ALERT_OUTBOX_AGE_S: 60,
      ALERT_DEAD_LETTERS: 1,
      ALERT_SUCCESS_RATE: 0.9,
      ALERT_SUCCESS_MIN_ATTEMPTS: attempts + 1,
    });
    assert.equal(find(fewer, "success_rate", "kitchen"), undefined);
    assert.ok(find(fewer, "dead_letters", "kitchen"));

    // The receivers over the last hour.
    const receivers = await receiversOf(client);
    assert.deepEqual(receivers.map((r) => r.name), [...SUBSCRIBERS]);
    const kitchen = receivers.find((r) => r.name === "kitchen")!;
    assert.equal(kitchen.paused, false);
    assert.equal(kitchen.attempts, attempts);
    assert.equal(kitchen.done, 2);
    assert.equal(kitchen.successRate, 2 / attempts);
    assert.match(kitchen.lastError ?? "", /^Kitchen answered 503/);
    assert.equal(kitchen.minutes.length, 60);
    assert.equal(kitchen.minutes.reduce((n, m) => n + m.done, 0), 2);
    assert.equal(kitchen.minutes.reduce((n, m) => n + m.attempts, 0), attempts);
    assert.equal(kitchen.throughputPerMinute, 2 / 60);
    assert.equal(typeof kitchen.p95LatencyMs, "number");
    const last = kitchen.minutes.at(-1)!;
    assert.ok(Date.parse(last.at) <= Date.now());
    assert.ok(Date.parse(last.at) > Date.now() - 120_000);
    const receipts = receivers.find((r) => r.name === "receipts")!;
    assert.deepEqual(
      [receipts.attempts, receipts.done, receipts.successRate],
      [1, 1, 1],
    );
    assert.equal(receipts.lastError, null);
    const quiet = await receiversOf(other);
    assert.ok(quiet.every((r) => r.attempts === 0 && r.successRate === null));

    // The receivers page and the overview draw the charts.
    const page = await client.fetch("/console/receivers");
    assert.equal(page.status, 200);
    const html = await page.text();
    assert.match(html, /data-testid="receiver-kitchen"/);
    assert.match(html, /Kitchen answered 503/);
    // The server renders each chart's box and its summary; uPlot draws in
    // the box in the browser (tests/e2e/console_charts_test.ts).
    const chartBox =
      /<div class="chart-box chart-box-minutes" data-testid="chart-kitchen">/;
    assert.match(html, chartBox);
    assert.match(html, /done: peak \d+ per minute/);
    const overview = await (await client.fetch("/console")).text();
    assert.match(overview, chartBox);
    // Every console page carries the banner, rendered with the alerts.
    assert.match(overview, /data-testid="alert-dead_letters-kitchen"/);

    // /metrics has the same readings, and promtool finds it well formed.
    const metrics = await (await fetch(new URL("/metrics", t.url))).text();
    const ratio = metrics.match(
      /^bakery_receiver_success_ratio\{subscriber="kitchen"\} (\S+)$/m,
    );
    assert.equal(Number(ratio?.[1]), 2 / attempts, metrics);
    assert.match(
      metrics,
      new RegExp(
        `^bakery_receiver_attempts_15m\\{subscriber="kitchen"\\} ${attempts}$`,
        "m",
      ),
    );
    assert.match(metrics, /^bakery_dead_letters\{subscriber="kitchen"\} 1$/m);
    if (PROMTOOL) {
      const checked = await promtool(["check", "metrics"], metrics);
      assert.equal(checked.code, 0, checked.output);
    }

    // Refused: the dead letter is closed, its alert clears.
    const refused = await client.json(
      "POST",
      `/api/console/dead-letters/${dead.id}/refuse`,
      { reason: "kitchen closed that day" },
    );
    assert.equal(refused.status, 200);
    assert.equal(
      find(await alertsOf(client), "dead_letters", "kitchen"),
      undefined,
    );
  }, { ALERT_SUCCESS_MIN_ATTEMPTS: "6" });
});

Deno.test("alerts: outbox_age when a sender's oldest ready row is older than ALERT_OUTBOX_AGE_S", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Outbox operator");
    // No workers: the order's OrderPlaced stays ready in the outbox.
    await placeOrderVia(client);
    let alert: Alert | undefined;
    await eventually("the outbox_age alert", async () => {
      alert = find(await alertsOf(client), "outbox_age", "orders");
      return alert !== undefined;
    });
    assert.equal(alert!.threshold, 1);
    assert.ok(alert!.value > 1, JSON.stringify(alert));
    assert.ok(Date.parse(alert!.since) <= Date.now());
    assert.equal(
      find(await alertsOf(client), "outbox_age", "billing"),
      undefined,
    );
  }, { WORKERS: "off", ALERT_OUTBOX_AGE_S: "1" });
});

Deno.test("order violations: an OrderCancelled redriven before its OrderPlaced makes the late OrderPlaced one, at the kitchen only", async () => {
  await withTestBakery(async (t) => {
    const client = t.client();
    await signIn(client, "Order operator");
    const other = t.client();
    await signIn(other, "Other operator");
    const none = await client.json<OrderViolations>(
      "GET",
      "/api/console/order-violations",
    );
    assert.deepEqual(none, { status: 200, body: { total: 0, items: [] } });

    // Both of the kitchen's messages of one order die there.
    await client.json("PUT", "/api/console/faults", { kitchenRefuses: true });
    const { orderId } = await placeOrderVia(client);
    await deadLettersSettle(client, 1);
    const cancel = await client.json("POST", `/api/orders/${orderId}/cancel`);
    assert.equal(cancel.status, 202);
    const dead = await deadLettersSettle(client, 2);
    await client.json("PUT", "/api/console/faults", { kitchenRefuses: false });

    // Redriven newest first: version 2 is applied, then version 1 arrives.
    const placed = dead.find((d) => d.eventType === "OrderPlaced")!;
    const cancelled = dead.find((d) => d.eventType === "OrderCancelled")!;
    for (const d of [cancelled, placed]) {
      const r = await client.json(
        "POST",
        `/api/console/dead-letters/${d.id}/redrive`,
      );
      assert.equal(r.status, 202);
      await eventually(`${d.eventType} applied again`, async () => {
        const { body } = await client.json<{ delivery: { state: string } }>(
          "GET",
          `/api/console/deliveries/${d.id}`,
        );
        return body.delivery.state === "done";
      });
    }

    const { status, body } = await client.json<OrderViolations>(
      "GET",
      "/api/console/order-violations",
    );
    assert.equal(status, 200);
    assert.equal(body.total, 1);
    const [v] = body.items;
    assert.deepEqual({ ...v, at: typeof v.at }, {
      subscriber: "kitchen",
      aggregateId: orderId,
      messageId: placed.messageId,
      eventType: "OrderPlaced",
      arrivedVersion: 1,
      appliedVersion: 2,
      at: "string",
    });
    const kitchenOnly = await client.json<OrderViolations>(
      "GET",
      "/api/console/order-violations?subscriber=schedule",
    );
    assert.equal(kitchenOnly.body.total, 0);
    const bad = await client.json(
      "GET",
      "/api/console/order-violations?subscriber=bakery",
    );
    assert.equal(bad.status, 400);
    assert.equal(
      (await other.json<OrderViolations>(
        "GET",
        "/api/console/order-violations",
      ))
        .body.total,
      0,
    );

    // The overview counts it, with a link to the list.
    const overview = await client.json<{ orderViolations: { total: number } }>(
      "GET",
      "/api/console/overview",
    );
    assert.equal(overview.body.orderViolations.total, 1);
    const html = await (await client.fetch("/console")).text();
    assert.match(
      html,
      /data-testid="overview-violations-link"[^>]*>1 message arrived/,
    );
    const list = await (await client.fetch("/console/order-violations")).text();
    assert.match(list, new RegExp(placed.messageId));
  });
});

Deno.test("watch endpoints: signed out is 401", async () => {
  await withTestBakery(async (t) => {
    const guest = t.client();
    for (
      const path of [
        "/api/console/alerts",
        "/api/console/receivers",
        "/api/console/order-violations",
      ]
    ) {
      const { status } = await guest.json("GET", path);
      assert.equal(status, 401, path);
    }
  }, { WORKERS: "off" });
});
