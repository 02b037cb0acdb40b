/**
 * Workers you can see (docs/console.md, "Workers"): two `deno task worker`
 * processes beat every 200 ms beside a web app that runs none. The one that
 * holds a lease is SIGKILLed: the list shows it silent within three beats,
 * the silent_worker alert fires and /metrics says the same. The other,
 * stopped with SIGTERM, leaves the list at once; then waiting work with no
 * live worker raises no_live_worker. A new worker takes over: once the dead
 * one's leases have expired both alerts clear, and its row is aged out
 * after a hundred of its beats.
 */
import assert from "node:assert/strict";
import { countOf, placeOrderVia, signIn, startTestBakery } from "./_app.ts";
import { killAll, logTail, type Main, startWorker, until } from "./_main.ts";
import type { Alert, WorkersData } from "../services/console/contracts.ts";
import type { Sql } from "../lib/db/connect.ts";

const BEAT_MS = 200;

const WORKER_ENV = {
  WORKER_BEAT_MS: String(BEAT_MS),
  // Long enough to see the dead worker's alert before its lease runs out;
  // the slow kitchen keeps each batch out for DELIVERY_TIMEOUT_MS.
  CONSUMER_LEASE_MS: "5000",
  DELIVERY_TIMEOUT_MS: "2000",
  RETRY_DELAYS_MS: Array(20).fill("200").join(","),
  RELAY_RETRY_MS: "200",
  POLL_INTERVAL_MS: "500",
  SANDBOX_WIPE: "off",
  APP_VERSION: "test-7",
};

/** The owner id a worker writes into its leases, from its log. */
async function ownerOf(worker: Main): Promise<string> {
  let owner: string | undefined;
  await until("a worker to start its messaging", () => {
    owner = worker.lines.find((l) => l.event === "messaging_started")
      ?.owner as string | undefined;
    return owner !== undefined;
  }, 60_000);
  return owner!;
}

/** Whether `owner` holds a lease on a delivery now. */
async function holdsLeases(sql: Sql, owner: string): Promise<boolean> {
  return await countOf(sql<{ n: number }[]>`
    select count(*)::int as n from queue.deliveries
     where state = 'in_flight' and lease_owner like ${`${owner}#%`}`) > 0;
}

Deno.test("workers: a SIGKILLed worker turns silent within three beats, alerts, and is taken over", async () => {
  const t = await startTestBakery({ ...WORKER_ENV, WORKERS: "off" });
  const workers: Main[] = [];
  try {
    const client = t.client({ checkAnswers: true });
    await signIn(client, "Workers");
    const list = async () => {
      const { status, body } = await client.json<WorkersData>(
        "GET",
        "/api/console/workers",
      );
      assert.equal(status, 200, JSON.stringify(body));
      return body.items;
    };
    const alerts = async () =>
      (await client.json<{ alerts: Alert[] }>("GET", "/api/console/alerts"))
        .body.alerts;
    const workerEnv = { ...WORKER_ENV, DATABASE_URL: t.db.url };

    assert.deepEqual(await list(), [], "no worker runs yet");
    workers.push(startWorker(workerEnv), startWorker(workerEnv));
    const owners = await Promise.all(workers.map(ownerOf));
    await until("both workers listed live", async () => {
      const items = await list();
      return owners.every((o) =>
        items.some((w) => w.id === o && w.state === "live")
      );
    });
    const [first] = await list();
    assert.equal(first.host, Deno.hostname());
    assert.deepEqual(first.roles, ["relay", "consume"]);
    assert.equal(first.transport, "postgres");
    assert.equal(first.version, "test-7");

    // The kitchen answers after the timeout: its deliveries stay leased.
    const faults = await client.json("PUT", "/api/console/faults", {
      kitchenSlow: true,
    });
    assert.equal(faults.status, 200);
    // Killed once its own beat has reported the lease: what the list knows.
    // The workers read the fault switches through a cache, so orders keep
    // coming until one meets the slow kitchen.
    let victim = -1;
    let orderedAt = 0;
    await until("a worker's beat to report a lease", async () => {
      if (Date.now() - orderedAt > 1_000) {
        orderedAt = Date.now();
        await placeOrderVia(client);
      }
      const holding = (await list()).find((w) => w.leases > 0);
      victim = holding ? owners.indexOf(holding.id) : -1;
      return victim >= 0;
    });
    const dead = owners[victim];
    const survivor = workers[1 - victim];
    Deno.kill(-workers[victim].child.pid, "SIGKILL");
    const killedAt = Date.now();
    await workers[victim].child.status;

    // Silent within three beats of its last one, with slack for the reads.
    await until(
      "the killed worker listed silent",
      async () =>
        (await list()).some((w) => w.id === dead && w.state === "silent"),
      3 * BEAT_MS + 1_500,
    );
    const silentAfter = Date.now() - killedAt;
    const items = await list();
    assert.equal(items.find((w) => w.id === dead)?.state, "silent");
    assert.ok(items.find((w) => w.id === dead)!.leases > 0, "its lease held");
    assert.equal(items.find((w) => w.id === owners[1 - victim])?.state, "live");
    const fired = (await alerts()).filter((a) => a.kind.endsWith("worker"));
    assert.deepEqual(fired.map((a) => [a.kind, a.subject]), [
      ["silent_worker", dead],
    ], "a silent worker with leases, and the other still serves");
    const metrics = await (await fetch(new URL("/metrics", t.url))).text();
    assert.match(metrics, /^bakery_workers\{state="silent"\} 1$/m);
    assert.match(metrics, /^bakery_workers_silent_with_leases 1$/m);

    // Stopped cleanly, the other leaves the list at once.
    const survivorPid = survivor.child.pid;
    Deno.kill(-survivorPid, "SIGTERM");
    assert.equal((await survivor.child.status).code, 0);
    assert.deepEqual((await list()).map((w) => w.id), [dead]);

    // Work waits and no live worker serves it.
    await placeOrderVia(client);
    await until(
      "no_live_worker to fire",
      async () =>
        (await alerts()).some((a) =>
          a.kind === "no_live_worker" && a.subject === "relay"
        ),
    );
    assert.match(
      await (await fetch(new URL("/metrics", t.url))).text(),
      /^bakery_workers_live_by_role\{role="relay"\} 0$/m,
    );

    // A new worker takes over: the dead one's leases expire and are taken,
    // and both alerts clear.
    const next = startWorker(workerEnv);
    workers.push(next);
    await ownerOf(next);
    await until(
      "the workers' alerts to clear",
      async () => !(await alerts()).some((a) => a.kind.endsWith("worker")),
      20_000,
    );
    assert.equal(
      await holdsLeases(t.sql, dead),
      false,
      "its deliveries were taken over",
    );
    // A hundred beats after its last, the dead row is aged out.
    await until(
      "the dead worker's row aged out",
      async () => !(await list()).some((w) => w.id === dead),
      100 * BEAT_MS + 10_000,
    );
    console.log(`silent ${silentAfter} ms after the kill`);
  } catch (error) {
    for (const w of workers) console.log(logTail(w, 10));
    console.log(JSON.stringify(
      await t.sql`select id, subscriber, state, lease_owner, lease_expires_at
                    from queue.deliveries order by id`,
    ));
    throw error;
  } finally {
    for (const w of workers) await killAll(w);
    await t.stop();
  }
});
