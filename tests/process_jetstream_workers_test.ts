/**
 * Scale over JetStream, as an operator runs it: the web app with
 * WORKERS=off and three `deno task worker` processes with QUEUE=jetstream,
 * all on one database, with a nats-server of the test's own. Paid orders
 * come through the HTTP API; one worker is killed (SIGKILL, its whole
 * process group) while it holds leases, and the NATS server is killed and
 * started again on the same port and store while orders keep coming. Once
 * everything has settled, the rows say: every delivery of every paid order
 * done, each receiver's inbox one row per message addressed to it, each
 * effect once per order, and the closure owes nothing.
 */
import assert from "node:assert/strict";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { freePort } from "../kit/postgres/embedded.ts";
import type { Sql } from "../lib/db/connect.ts";
import { countOf } from "./_app.ts";
import { testDatabase } from "./_db.ts";
import {
  groupProcesses,
  killAll,
  type Main,
  startMain,
  startWorker,
  stopWithin,
  until,
  waitHealthy,
} from "./_main.ts";
import { testStream } from "./_nats.ts";
import { NatsServer, natsServerTest } from "./_nats_server.ts";
import {
  allSettled,
  assertClosuresClean,
  assertPaidOnce,
  payingLoad,
  PER_ORDER,
} from "./_paid_checks.ts";

/** Six sandboxes of twenty paid orders: 120 orders, 1,200 deliveries. */
const CLIENTS = 6;
const PER_CLIENT = 20;
const ORDERS = CLIENTS * PER_CLIENT;

/**
 * Settings of the run. A receiver's "not yet" (the kitchen's 409 for an
 * OrderPaid that came before its OrderPlaced) must be retried for longer
 * than a message can be held up by the kill or the outage, or it becomes a
 * dead letter by design: an OrderPlaced in the killed worker's hands comes
 * back after AckWait (10 s, from DELIVERY_TIMEOUT_MS), one on an outbox row
 * it had claimed after the relay's lease (30 s). So five retries over 40 s,
 * where the suite's usual 100, 200 and 300 ms made two dead letters in
 * about one run of six.
 */
const SETTINGS = {
  RETRY_DELAYS_MS: "250,1000,4000,10000,25000",
  RELAY_RETRY_MS: "200",
  POLL_INTERVAL_MS: "500",
  DELIVERY_TIMEOUT_MS: "2000",
  SANDBOX_WIPE: "off",
  LOG_LEVEL: "info",
};

/** The owner id a worker writes into its leases, from its log. */
async function ownerOf(worker: Main): Promise<string> {
  let owner: string | undefined;
  await until("a worker to start its messaging", () => {
    const line = worker.lines.find((l) => l.event === "messaging_started");
    owner = line?.owner as string | undefined;
    return owner !== undefined;
  }, 60_000);
  return owner!;
}

/** Whether `owner` holds a lease on an outbox row or a delivery now. */
async function holdsLeases(sql: Sql, owner: string): Promise<boolean> {
  return await countOf(sql<{ n: number }[]>`
    select ((select count(*) from queue.deliveries
              where lease_owner like ${`${owner}#%`})
          + (select count(*) from orders.outbox where lease_owner = ${owner})
          + (select count(*) from billing.outbox where lease_owner = ${owner})
           )::int as n`) > 0;
}

/** What each durable consumer of `stream` has pending, for a failure. */
async function consumersOf(nats: NatsServer, stream: string) {
  const nc = await connect({ servers: nats.url });
  try {
    const jsm = await jetstreamManager(nc);
    const found: Record<string, unknown>[] = [];
    for await (const c of jsm.consumers.list(stream)) {
      found.push({
        name: c.name,
        pending: c.num_pending,
        ackPending: c.num_ack_pending,
        redelivered: c.num_redelivered,
        waiting: c.num_waiting,
        delivered: c.delivered.stream_seq,
        ackFloor: c.ack_floor.stream_seq,
      });
    }
    return found;
  } finally {
    await nc.close();
  }
}

natsServerTest(
  "process: three deno task worker processes over JetStream, one SIGKILLed and the NATS server restarted under load: lost 0, doubled 0",
  async () => {
    const nats = await NatsServer.start();
    const db = await testDatabase({ max: 4 });
    const dataDir = await Deno.makeTempDir({ prefix: "bakery-jsproc-" });
    const port = await freePort();
    const stream = testStream();
    const common = {
      ...SETTINGS,
      DATABASE_URL: db.url,
      QUEUE: "jetstream",
      NATS_URL: nats.url,
      NATS_STREAM: stream,
    };
    const web = startMain({
      ...common,
      WORKERS: "off",
      PORT: String(port),
      DATA_DIR: dataDir,
    });
    const workers = [0, 1, 2].map(() => startWorker(common));
    try {
      await waitHealthy(web, port);
      const owners = await Promise.all(workers.map(ownerOf));

      // The load: each sandbox's client places and pays its orders in turn.
      const load = await payingLoad(
        `http://127.0.0.1:${port}/`,
        CLIENTS,
        PER_CLIENT,
      );
      const { clients, loading } = load;
      const paid = () => load.paid;

      // A worker killed while it holds leases: a relay's claim on outbox rows
      // or deliveries taken from the broker and not yet answered.
      const [victim] = workers;
      await until(
        "the first worker to hold leases, a quarter of the orders paid",
        async () =>
          loading() && paid() >= ORDERS / 4 &&
          await holdsLeases(db.sql, owners[0]),
        60_000,
      );
      Deno.kill(-victim.child.pid, "SIGKILL");
      assert.equal((await victim.child.status).signal, "SIGKILL");

      // The broker killed under load, and started again on the same port and
      // store once more orders were paid while it was away.
      await until(
        "half of the orders paid",
        () => loading() && paid() >= ORDERS / 2,
      );
      await nats.kill("SIGKILL");
      const whileDown = Math.min(ORDERS, paid() + 2 * CLIENTS);
      await until(
        "orders paid while the broker is down",
        () => loading() && paid() >= whileDown,
      );
      await nats.restart();
      await load.done;

      await allSettled(db.sql, ORDERS, 90_000, async () => {
        const open = await db.sql`
          select d.id, d.subscriber, d.type, d.state, d.attempts,
                 d.lease_owner, d.last_status, d.last_error, d.created_at,
                 d.next_attempt_at
            from queue.deliveries d where d.state <> 'done'
           order by d.id limit 10`;
        return `; open: ${JSON.stringify(open)}; workers: ${
          JSON.stringify(owners)
        }; consumers: ${JSON.stringify(await consumersOf(nats, stream))}`;
      });

      await assertPaidOnce(db.sql, ORDERS);

      // The broker holds one message per delivery: the relay's repeats after
      // the outage were stored once.
      const nc = await connect({ servers: nats.url });
      try {
        const info = await (await jetstreamManager(nc)).streams.info(stream);
        assert.equal(info.state.messages, ORDERS * PER_ORDER);
      } finally {
        await nc.close();
      }

      await assertClosuresClean(clients, PER_CLIENT);

      // What the kill and the outage cost, for whoever reads the run.
      const [cost] = await db.sql`
      select (select count(*) from queue.deliveries where attempts > 1)::int
               as "deliveriesAttemptedAgain",
             ((select count(*) from orders.outbox where attempts > 0)
              + (select count(*) from billing.outbox where attempts > 0))::int
               as "outboxRowsRetried"`;
      console.log(`after the kill and the restart: ${JSON.stringify(cost)}`);

      // The two workers left stop on SIGTERM, each within 10 s, whole groups.
      for (const worker of workers.slice(1)) {
        const pgid = worker.child.pid;
        Deno.kill(-pgid, "SIGTERM");
        await until(
          "a worker's process group to exit",
          async () => (await groupProcesses(pgid)).length === 0,
          10_000,
        );
      }
      const stopped = await stopWithin(web, "SIGTERM", 10_000);
      assert.equal(stopped?.code, 0, await web.stderr);
    } finally {
      for (const main of [...workers, web]) await killAll(main);
      await nats.stop();
      await db.drop();
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
);
