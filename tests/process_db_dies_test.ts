/**
 * The database dies under a running program. Its own embedded PostgreSQL
 * killed: the program brings it back, and the workers and the live pages
 * carry on. SIGINT while it is down: the whole program stops within 10 s and
 * leaves no postgres process. A server of DATABASE_URL, which the program
 * does not own, gone: it answers 503 and still stops within 10 s.
 */
import assert from "node:assert/strict";
import { freePort, startEmbedded } from "../kit/postgres/embedded.ts";
import { ensureDatabase } from "../kit/postgres/open.ts";
import { withDatabase } from "../lib/db/connect.ts";
import { memoryLogger } from "../lib/log/mod.ts";
import { Client, orderSettles, payVia, placeOrderVia, signIn } from "./_app.ts";
import {
  events,
  killAll,
  logTail,
  type Main,
  postgresProcesses,
  postmasterPid,
  startMain,
  stopWithin,
  until,
  waitHealthy,
} from "./_main.ts";

/** Short retries, as the other tests of the whole bakery use. */
const FAST = {
  RETRY_DELAYS_MS: "100,200,300",
  // The first posts of the checkout's event after the restart may meet the
  // pool's connections that PostgreSQL's death left behind (503): retried
  // within seconds, not on the default schedule's half minute.
  CHECKOUT_RETRY_DELAYS_MS: "100,200,400,800,1600,3200,6400",
  RELAY_RETRY_MS: "200",
  POLL_INTERVAL_MS: "500",
  SANDBOX_WIPE: "off",
};

/** Counts the `change` events of an open `GET /api/events` stream. */
async function openChanges(client: Client) {
  const abort = new AbortController();
  const response = await client.fetch("/api/events", {
    headers: { accept: "text/event-stream" },
    signal: abort.signal,
  });
  assert.equal(response.status, 200);
  const reader = response.body!.pipeThrough(new TextDecoderStream())
    .getReader();
  const stream = { changes: 0, text: "" };
  const reading = (async () => {
    while (true) {
      const { done, value } = await reader.read();
      if (done) return;
      stream.text += value;
      stream.changes = stream.text.split("event: change\n").length - 1;
    }
  })().catch(() => {});
  return {
    stream,
    close: async () => {
      abort.abort();
      await reader.cancel().catch(() => {});
      await reading;
    },
  };
}

/** A temporary data directory for main.ts, and its cluster's path. */
async function dataDir() {
  const dir = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "bakery-dies-" }),
  );
  return { dir, cluster: `${dir}/pg` };
}

Deno.test("process: the embedded PostgreSQL killed under the app comes back; workers and live pages carry on", async () => {
  const { dir, cluster } = await dataDir();
  const port = await freePort();
  const main = startMain({
    ...FAST,
    DATA_DIR: dir,
    PORT: String(port),
    DATABASE_URL: "",
  });
  let live: Awaited<ReturnType<typeof openChanges>> | undefined;
  try {
    await waitHealthy(main, port);
    const client = new Client(`http://127.0.0.1:${port}/`);
    await signIn(client, "Through the outage");
    live = await openChanges(client);
    await until(
      "the stream's hello",
      () => live!.stream.text.includes("hello"),
    );

    const dead = await postmasterPid(cluster);
    Deno.kill(dead, "SIGKILL");
    await waitHealthy(main, port, 30_000);
    await until(
      "the restart in the log",
      () => events(main).includes("postgres_restarted"),
    );
    const back = await postmasterPid(cluster);
    assert.notEqual(back, dead);
    assert.ok(events(main).includes("postgres_died"), events(main).join(" "));
    // The live pages' listener is back (the workers' one says its owner).
    await until(
      "the change feed to listen again",
      () =>
        main.lines.some((l) => l.event === "listener_reconnected" && !l.owner),
    );

    const seen = live.stream.changes;
    const { orderId } = await placeOrderVia(client);
    await payVia(client, orderId);
    const order = await orderSettles(client, orderId, "paid", 30_000)
      .catch((error) => {
        throw new Error(
          `${error.message}\nthe program's log:\n${logTail(main)}`,
        );
      });
    assert.ok(order.deliveries.length > 0);
    await until(
      "a change on the open stream",
      () => live!.stream.changes > seen,
    );
    await live.close();
    live = undefined;

    const status = await stopWithin(main, "SIGINT", 10_000);
    assert.equal(status?.code, 0, "stopped within 10 s, exit 0");
    assert.deepEqual(await postgresProcesses(cluster), []);
  } finally {
    await live?.close();
    await killAll(main, cluster);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("process: SIGINT while the embedded PostgreSQL is down stops everything within 10 s", async () => {
  const { dir, cluster } = await dataDir();
  const port = await freePort();
  const main = startMain({
    ...FAST,
    DATA_DIR: dir,
    PORT: String(port),
    DATABASE_URL: "",
  });
  try {
    await waitHealthy(main, port);
    // SIGINT right after the kill: PostgreSQL is down (a restart waits a
    // while first), and the program may or may not have noticed yet.
    Deno.kill(await postmasterPid(cluster), "SIGKILL");
    const status = await stopWithin(main, "SIGINT", 10_000);
    assert.equal(status?.code, 0, "stopped within 10 s, exit 0");
    assert.deepEqual(await postgresProcesses(cluster), []);
  } finally {
    await killAll(main, cluster);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("process: with DATABASE_URL, a server that goes away gives 503, and SIGINT still stops within 10 s", async () => {
  const server = await dataDir();
  const { logger } = memoryLogger("error");
  const external = await startEmbedded({ dataDir: server.dir, log: logger });
  const { dir } = await dataDir();
  const port = await freePort();
  let main: Main | undefined;
  try {
    await ensureDatabase(external.url, "bakery");
    main = startMain({
      ...FAST,
      DATA_DIR: dir,
      PORT: String(port),
      DATABASE_URL: withDatabase(external.url, "bakery"),
    });
    await waitHealthy(main, port);
    // The server goes away for good: this program does not own it.
    await external.stop();
    await until("health to answer 503", async () => {
      const res = await fetch(`http://127.0.0.1:${port}/health`).catch(
        async (error) => {
          const status = await Promise.race([main!.child.status, "running"]);
          throw new Error(
            `no answer (${JSON.stringify(status)}): ${await Promise.race([
              main!.stderr,
              "",
            ])}`,
            { cause: error },
          );
        },
      );
      await res.body?.cancel();
      return res.status === 503;
    });
    const status = await stopWithin(main, "SIGINT", 10_000);
    await main.stdoutDone;
    assert.equal(
      status?.code,
      0,
      `stopped within 10 s, exit 0; the program's log:\n${logTail(main)}`,
    );
    assert.ok(!events(main).includes("postgres_restarting"));
  } finally {
    if (main) await killAll(main);
    await external.stop();
    await Deno.remove(server.dir, { recursive: true });
    await Deno.remove(dir, { recursive: true });
  }
});
