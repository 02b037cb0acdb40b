/**
 * Traces: the whole program started with OTEL_DENO=true exports OTLP (as
 * JSON here) to a collector this test runs. Each paid order is one trace,
 * from the POST that placed it, through paying, the checkout's webhook,
 * billing's PaymentSucceeded, orders' OrderPaid and the relay, to an apply
 * in each of the six receivers; the order's timeline shows the trace id.
 */
import assert from "node:assert/strict";
import { freePort } from "../kit/postgres/embedded.ts";
import { ROUTING } from "../services/routing.ts";
import {
  Client,
  type OrderJson,
  orderSettles,
  payVia,
  placeOrderVia,
  signIn,
} from "./_app.ts";
import { testDatabase } from "./_db.ts";
import { killAll, logTail, startMain, until, waitHealthy } from "./_main.ts";

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: { key: string; value: Record<string, unknown> }[];
  links?: { traceId: string }[];
}

/** An OTLP/HTTP collector on loopback that keeps the spans it is sent. */
function collector(port: number) {
  const spans: OtlpSpan[] = [];
  const server = Deno.serve(
    { port, hostname: "127.0.0.1", onListen: () => {} },
    async (request) => {
      const body = await request.json().catch(() => ({}));
      if (new URL(request.url).pathname === "/v1/traces") {
        for (const rs of body.resourceSpans ?? []) {
          for (const ss of rs.scopeSpans ?? []) spans.push(...ss.spans ?? []);
        }
      }
      return Response.json({});
    },
  );
  return { spans, stop: () => server.shutdown() };
}

function attribute(span: OtlpSpan, key: string): unknown {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  return value && Object.values(value)[0];
}

const ORDERS = 2;

Deno.test("traces: each paid order is one trace that reaches all six receivers", async () => {
  const otlpPort = await freePort();
  const otlp = collector(otlpPort);
  const db = await testDatabase({ max: 4 });
  const dataDir = await Deno.makeTempDir({ prefix: "bakery-traces-" });
  const port = await freePort();
  const main = startMain({
    DATABASE_URL: db.url,
    DATA_DIR: dataDir,
    PORT: String(port),
    RETRY_DELAYS_MS: "100,200,300",
    POLL_INTERVAL_MS: "500",
    SANDBOX_WIPE: "off",
    OTEL_DENO: "true",
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${otlpPort}`,
    OTEL_SERVICE_NAME: "outbox-bakery",
    OTEL_DENO_CONSOLE: "ignore",
  });
  try {
    await waitHealthy(main, port);
    const client = new Client(`http://127.0.0.1:${port}/`);
    await signIn(client, "Traced");
    const orders: OrderJson[] = [];
    for (let i = 0; i < ORDERS; i++) {
      const { orderId } = await placeOrderVia(client);
      await payVia(client, orderId);
      orders.push(await orderSettles(client, orderId, "paid", 30_000));
    }
    const receivers = ROUTING.OrderPaid;
    const applied = (traceId: string) =>
      new Set(
        otlp.spans.filter((s) =>
          s.traceId === traceId && s.name.startsWith("apply ") &&
          attribute(s, "outbox.event_type") === "OrderPaid"
        ).map((s) => attribute(s, "messaging.destination.name")),
      );
    for (const order of orders) {
      // The timeline shows the trace of each message; the payment's and
      // the OrderPaid it led to are one.
      const traceOf = (type: string) =>
        order.messages.find((m) => m.eventType === type)?.traceId;
      const payment = traceOf("PaymentSucceeded");
      assert.match(payment ?? "", /^[0-9a-f]{32}$/);
      assert.equal(traceOf("OrderPaid"), payment);
      assert.equal(traceOf("OrderPlaced"), payment);
      await until(
        `the spans of order ${order.orderId}'s payment`,
        () => applied(payment!).size === receivers.length,
        20_000,
      ).catch((error) => {
        throw new Error(
          `${error.message}; applied: ${[
            ...applied(payment!),
          ]}; ${otlp.spans.length} spans; ${logTail(main, 10)}`,
        );
      });
      const inTrace = otlp.spans.filter((s) => s.traceId === payment);
      // It starts at the request that placed the order, pays in it, and
      // holds each delivery attempt.
      assert.ok(
        inTrace.some((s) =>
          attribute(s, "url.path") === "/api/orders" &&
          attribute(s, "http.request.method") === "POST"
        ),
        `the order's POST in ${inTrace.map((s) => s.name)}`,
      );
      assert.ok(inTrace.some((s) => s.name === "pay"), "the pay span");
      const attempts = new Set(
        inTrace.filter((s) => s.name.startsWith("deliver "))
          .map((s) => attribute(s, "messaging.destination.name")),
      );
      for (const r of receivers) assert.ok(attempts.has(r), `deliver ${r}`);
      // The relay's move that carried the payment links to its trace.
      assert.ok(
        otlp.spans.some((s) =>
          s.name.startsWith("relay ") &&
          s.links?.some((l) => l.traceId === payment)
        ),
        "a relay span links to the payment's trace",
      );
    }
    // One trace per paid order reaches all six receivers.
    const full = new Set(
      otlp.spans.map((s) => s.traceId).filter((t) =>
        applied(t).size === receivers.length
      ),
    );
    assert.equal(full.size, ORDERS);
  } finally {
    await killAll(main);
    await otlp.stop();
    await db.drop();
    await Deno.remove(dataDir, { recursive: true });
  }
});
