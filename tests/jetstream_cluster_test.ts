/**
 * The bakery over a three-node NATS cluster on loopback, started by the
 * test, with NATS_REPLICAS=3 and the three servers in NATS_URL. While paid
 * orders keep coming, one server that does not lead the stream is killed
 * (SIGKILL) and started again, then the one that leads it. Every delivery
 * still ends done once, every effect happens once, and the closures owe
 * nothing.
 */
import assert from "node:assert/strict";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { withTestBakery } from "./_app.ts";
import { until } from "./_main.ts";
import { testStream } from "./_nats.ts";
import { NatsServer, natsServerTest } from "./_nats_server.ts";
import {
  allSettled,
  assertClosuresClean,
  assertPaidOnce,
  payingLoad,
} from "./_paid_checks.ts";

const CLIENTS = 3;
const PER_CLIENT = 8;
const ORDERS = CLIENTS * PER_CLIENT;

/** The server that leads the stream's replicas (`n0`, `n1`, ...). */
async function leaderOf(servers: NatsServer[], stream: string) {
  const nc = await connect({ servers: servers.map((s) => s.url) });
  try {
    const info = await (await jetstreamManager(nc)).streams.info(stream);
    assert.equal(info.config.num_replicas, 3);
    return Number(info.cluster?.leader?.replace(/^n/, ""));
  } finally {
    await nc.close();
  }
}

natsServerTest(
  "jetstream cluster: NATS_REPLICAS=3, one server and then the stream's leader killed under load: lost 0, doubled 0",
  async () => {
    const servers = await NatsServer.cluster(3);
    const stream = testStream();
    try {
      await withTestBakery(async (t) => {
        const health = await (await fetch(new URL("/health", t.url))).json();
        assert.equal(health.cluster.name, "bakery_test");
        assert.equal(health.cluster.replicas, 3);

        const load = await payingLoad(t.url, CLIENTS, PER_CLIENT);
        const killed = async (which: number, after: number) => {
          await until(
            `${after} orders paid`,
            () => load.loading() && load.paid >= after,
            60_000,
          );
          await servers[which].kill("SIGKILL");
          await until(
            "two more orders paid with a server down",
            () => load.loading() && load.paid >= after + 2,
            60_000,
          );
          await servers[which].restart();
        };
        // The stream of OrderPlaced and OrderPaid: nine deliveries in ten.
        const orders = t.streamOf("orders");
        const leader = await leaderOf(servers, orders);
        await killed((leader + 1) % servers.length, ORDERS / 4);
        await killed(await leaderOf(servers, orders), ORDERS / 2);
        await load.done;

        await allSettled(t.sql, ORDERS);
        await assertPaidOnce(t.sql, ORDERS);
        await assertClosuresClean(load.clients, PER_CLIENT);
      }, {
        QUEUE: "jetstream",
        NATS_URL: servers.map((s) => s.url).join(","),
        NATS_STREAM: stream,
        NATS_REPLICAS: "3",
        // As in process_jetstream_workers_test.ts: a "not yet" must be
        // retried for longer than a message can be held up by the loss of
        // a server (a lane's consumer moving to another leader).
        RETRY_DELAYS_MS: "250,1000,4000,10000,25000",
      });
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
    }
  },
);
