/**
 * The whole bakery over JetStream with a backlog of paid orders and no look
 * at the lanes by the workers (their poll an hour away), while the lanes'
 * info is asked for from outside, as an operator's `nats consumer ls` would.
 * NATS 2.9 then sometimes tells a fetch that a lane has nothing left when it
 * has (its pending count under zero, reported as none): a consumer that
 * believed it waited for the poll, here for good. Every delivery is done,
 * and each receiver's inbox holds each of its messages.
 */
import assert from "node:assert/strict";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { memoryLogger } from "../lib/log/mod.ts";
import { MENU } from "../services/menu.ts";
import { startBakeryMessaging } from "../services/mod.ts";
import { placeOrder } from "../services/orders/place.ts";
import { createPayment } from "../services/billing/open_payment.ts";
import { recordStripeEvent } from "../services/billing/payments.ts";
import { SUBSCRIBERS } from "../services/routing.ts";
import { countOf, eventually, paymentIntentEvent, testConfig } from "./_app.ts";
import { withTestDatabase } from "./_db.ts";
import { dropStream, natsTest, TEST_NATS_URL, testStream } from "./_nats.ts";

const SANDBOXES = 8;
const ORDERS_PER_SANDBOX = 120;
/** OrderPlaced to three, the payment to orders, OrderPaid to six. */
const DELIVERIES_PER_ORDER = 10;

natsTest(
  "jetstream: a backlog of paid orders is delivered with no look at the lanes while their info is asked for from outside",
  async () => {
    await withTestDatabase(async (db) => {
      const { sql } = db;
      const today = Date.UTC(
        new Date().getUTCFullYear(),
        new Date().getUTCMonth(),
        new Date().getUTCDate(),
      );
      await Promise.all(
        Array.from({ length: SANDBOXES }, async (_, s) => {
          const [{ id: sandboxId }] = await sql<{ id: string }[]>`
            insert into platform.tenants (name) values (${`lanes ${s}`})
            returning id`;
          for (let i = 0; i < ORDERS_PER_SANDBOX; i++) {
            // One item, spread over days and products: never over capacity.
            const day = new Date(today + (i % 50) * 86_400_000)
              .toISOString().slice(0, 10);
            const placed = await placeOrder(sql, sandboxId, {
              items: [{ sku: MENU[i % MENU.length].sku, qty: 1 }],
              customer: { name: "Lane Tester", email: "lanes@example.com" },
              fulfilment: "delivery",
              day,
              idempotencyKey: `lanes-${s}-${i}`,
            });
            const paymentId = `pi_lanes_${s}_${i}`;
            await createPayment(sql, sandboxId, {
              id: paymentId,
              orderId: placed.orderId,
              amountCents: placed.totalCents,
              cardLast4: "4242",
            });
            await recordStripeEvent(
              sql,
              paymentIntentEvent({
                sandboxId,
                orderId: placed.orderId,
                paymentId,
                amountCents: placed.totalCents,
              }),
            );
          }
        }),
      );
      const stream = testStream();
      const { logger } = memoryLogger("warn");
      const messaging = await startBakeryMessaging({
        sql,
        log: logger,
        url: db.url,
        config: testConfig({
          QUEUE: "jetstream",
          NATS_URL: TEST_NATS_URL,
          NATS_STREAM: stream,
          POLL_INTERVAL_MS: "3600000",
        }),
      });
      const nc = await connect({ servers: TEST_NATS_URL });
      let looking = true;
      const looks = (async () => {
        const jsm = await jetstreamManager(nc);
        while (looking) {
          for await (const _ of jsm.consumers.list(stream)) {
            // Asking is the point.
          }
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      const total = SANDBOXES * ORDERS_PER_SANDBOX * DELIVERIES_PER_ORDER;
      try {
        await eventually(
          `all ${total} deliveries done`,
          async () =>
            await countOf(sql<{ n: number }[]>`
              select count(*)::int as n from queue.deliveries
               where state = 'done'`) === total,
          90_000,
        );
        // Each receiver applied each of its deliveries: its inbox holds as
        // many messages as it has deliveries done.
        for (const subscriber of SUBSCRIBERS) {
          const done = await countOf(sql<{ n: number }[]>`
            select count(*)::int as n from queue.deliveries
             where subscriber = ${subscriber} and state = 'done'`);
          assert.ok(done > 0, `${subscriber} had deliveries`);
          assert.equal(
            await countOf(sql<{ n: number }[]>`
              select count(*)::int as n from ${sql(`${subscriber}.inbox`)}`),
            done,
            `${subscriber}'s inbox against its deliveries done`,
          );
        }
        assert.equal(
          await countOf(sql<{ n: number }[]>`
            select count(*)::int as n from queue.deliveries
             where state <> 'done'`),
          0,
        );
      } finally {
        looking = false;
        await looks;
        await nc.close();
        await messaging.stop();
        await dropStream(stream);
      }
    });
  },
);
