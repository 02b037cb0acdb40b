/**
 * The broker is not the truth. Over JetStream, while the kitchen refuses
 * and its deliveries wait in the broker for their retries, the broker's
 * storage is wiped: the stream comes back empty. Nobody acts; the kitchen
 * recovers. The workers see that the lanes hold fewer messages than the
 * ledger has open, publish those deliveries again from the ledger, and every
 * paid order ends with one confirmed card, every receiver applied once, and
 * a closure that owes nothing.
 */
import assert from "node:assert/strict";
import { countOf, withTestBakery } from "./_app.ts";
import { until } from "./_main.ts";
import { counted } from "../lib/ledger/audit.ts";
import { testStream } from "./_nats.ts";
import { NatsServer, natsServerTest } from "./_nats_server.ts";
import {
  allSettled,
  assertClosuresClean,
  assertPaidOnce,
  payingLoad,
  PER_ORDER,
  progress,
} from "./_paid_checks.ts";

const ORDERS = 4;

natsServerTest(
  "jetstream: the broker's storage wiped while the kitchen refuses: the ledger publishes again, lost 0, doubled 0",
  async () => {
    const nats = await NatsServer.start();
    try {
      await withTestBakery(async (t) => {
        const load = await payingLoad(t.url, 1, ORDERS);
        const [client] = load.clients;
        const kitchen = async (refuses: boolean) => {
          const { status } = await client.json("PUT", "/api/console/faults", {
            kitchenRefuses: refuses,
          });
          assert.equal(status, 200);
        };
        await kitchen(true);
        await load.done;
        // Every delivery made, the kitchen's refused at least once and
        // waiting in the broker for a retry; the others done.
        const kitchenRefused = () =>
          countOf(t.at("orders")`
            select count(*)::int as n from queue.deliveries
             where subscriber = 'kitchen' and state = 'pending'
               and attempts >= 1`);
        await until("the kitchen's deliveries to be refused", async () => {
          const p = await progress(t.sql);
          return p.deliveries === ORDERS * PER_ORDER &&
            await kitchenRefused() === 2 * ORDERS;
        }, 30_000);

        await nats.kill("SIGKILL");
        await Deno.remove(nats.storeDir, { recursive: true });
        await Deno.mkdir(nats.storeDir);
        await nats.restart();
        await kitchen(false);

        await allSettled(t.sql, ORDERS);
        await assertPaidOnce(t.sql, ORDERS);
        await assertClosuresClean(load.clients, ORDERS);
        // It was the ledger that sent them again, and the log says why.
        const republished = await countOf(t.at("orders")`
          select count(*)::int as n from queue.deliveries
           where subscriber = 'kitchen' and republishes > 0`);
        assert.equal(republished, 2 * ORDERS);
        const overview = await client.json<
          { republished: { deliveries: number } }
        >("GET", "/api/console/overview");
        assert.equal(overview.body.republished.deliveries, 2 * ORDERS);
        assert.ok(
          t.lines.some((l) => l.event === "broker_lost_republished"),
          "the log says the broker lost messages",
        );
      }, {
        QUEUE: "jetstream",
        NATS_URL: nats.url,
        NATS_STREAM: testStream(),
        // The look at the lanes comes every 12 polls: 3 s.
        POLL_INTERVAL_MS: "250",
        // Retries that outlast the wipe: the kitchen refuses for a while.
        RETRY_DELAYS_MS: "1000,2000,4000,8000,15000,30000",
      });
    } finally {
      await nats.stop();
    }
  },
);

natsServerTest(
  "jetstream: a finish lost after the broker's ack (the row back to pending): sent again from the ledger, applied once",
  async () => {
    const nats = await NatsServer.start();
    try {
      await withTestBakery(async (t) => {
        const load = await payingLoad(t.url, 1, 1);
        await load.done;
        await allSettled(t.sql, 1, 30_000);
        // Audited first: an audit that ran between this statement's read
        // and its write would count the delivery's first finish after the
        // statement had decided there was nothing to take back.
        const orders = t.at("orders");
        await until("the kitchen's OrderPaid to be audited", async () => {
          const [row] = await orders<{ counted: boolean }[]>`
            select ${counted(orders)} as counted from queue.deliveries d
             where subscriber = 'kitchen' and type = 'OrderPaid'`;
          return row?.counted === true;
        }, 30_000);
        // What a PostgreSQL crash before its WAL flush would leave of a
        // finish the broker had been acknowledged for: the row as the
        // attempt began, the message gone from the broker, and nothing the
        // closure audit counted of it since (it counts done rows only).
        const [lost] = await orders<{ id: string }[]>`
          with lost as (
            select id, tenant_id, subscriber, ${counted(orders)} as counted
              from queue.deliveries d
             where subscriber = 'kitchen' and type = 'OrderPaid'
          ), uncounted as (
            update queue.closure_counts c set closed = c.closed - 1
              from lost
             where lost.counted and c.tenant_id = lost.tenant_id
               and c.subscriber = lost.subscriber
          )
          update queue.deliveries d
             set state = 'in_flight', done_at = null, done_xid = null,
                 lease_owner = 'a process that crashed',
                 lease_expires_at = now() - interval '1 minute',
                 next_attempt_at = now() - interval '1 minute'
            from lost where d.id = lost.id
           returning d.id`;
        await until("the lost finish to be done again", async () => {
          const [row] = await t.at("orders")<
            { state: string; republishes: number }[]
          >`
            select state, republishes from queue.deliveries
             where id = ${lost.id}`;
          return row.state === "done" && row.republishes === 1;
        }, 60_000);
        await assertPaidOnce(t.sql, 1);
        await assertClosuresClean(load.clients, 1);
      }, {
        QUEUE: "jetstream",
        NATS_URL: nats.url,
        NATS_STREAM: testStream(),
        POLL_INTERVAL_MS: "250",
      });
    } finally {
      await nats.stop();
    }
  },
);
