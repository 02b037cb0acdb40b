/**
 * Wake-up by LISTEN/NOTIFY: with a poll of a minute, a commit is delivered
 * within a second because the notification wakes the relay and then the
 * consumers; and that still holds after the listener's connection was killed
 * and came back. Over JetStream the notification wakes the relay, and the
 * broker hands the messages to the consumers' pending fetches.
 */
import assert from "node:assert/strict";
import { placeOrder, RECEIVERS } from "./services.ts";
import { count, waitFor } from "./rows.ts";
import type { Sql } from "../../db/connect.ts";
import { assertDelivered, assertStreamHolds, toEach } from "./broker.ts";
import type { Scenario } from "./harness.ts";

/** A minute: anything delivered within a second was woken, not polled. */
const POLL_MS = 60_000;

async function listenerPids(sql: Sql): Promise<number[]> {
  const rows = await sql<{ pid: number }[]>`
    select pid from pg_stat_activity
     where application_name = 'outbox-listener'
       and datname = current_database()`;
  return rows.map((r) => r.pid);
}

/** Commits an order and measures the time until every receiver has its job. */
async function deliveryTime(sql: Sql, tenantId: string, orderId: string) {
  await placeOrder(sql, tenantId, orderId);
  const committed = performance.now();
  await waitFor(`${orderId} at every receiver`, async () => {
    // Each receiver's jobs in its own database (count routes them).
    const n = await Promise.all(
      RECEIVERS.map((r) => count(sql, `${r}.jobs`, sql`order_id = ${orderId}`)),
    );
    return n.every((jobs) => jobs === 1);
  }, 5_000);
  return performance.now() - committed;
}

export const wakeupScenarios: Scenario[] = [{
  name:
    "a commit wakes idle workers: delivered within a second, also after the listener's connection was killed",
  run: async ({ sql, tenantId, view, workers }) => {
    await workers({ pollMs: POLL_MS }, async ({ lines }) => {
      const [pid] = await listenerPids(sql);
      assert.ok(pid, "the listener is connected");
      // Let the first ticks find nothing, so the loops sleep for the poll.
      await waitFor("the loops to go idle", async () => {
        const [{ n }] = await sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
         where datname = current_database() and application_name = 'test'
           and state = 'active' and pid <> pg_backend_pid()`;
        return n === 0;
      });

      const first = await deliveryTime(sql, tenantId, "O1");
      assert.ok(first < 1000, `the first order took ${first.toFixed(0)} ms`);

      const [{ killed }] = await sql<{ killed: boolean }[]>`
      select pg_terminate_backend(pid) as killed from pg_stat_activity
       where application_name = 'outbox-listener'
         and datname = current_database()`;
      assert.equal(killed, true);
      await waitFor("the listener to reconnect", async () => {
        const pids = await listenerPids(sql);
        return pids.length === 1 && pids[0] !== pid &&
          lines.some((l) => l.event === "listener_reconnected");
      });
      assert.ok(lines.some((l) => l.event === "listener_lost"));

      const second = await deliveryTime(sql, tenantId, "O2");
      assert.ok(second < 1000, `the second order took ${second.toFixed(0)} ms`);
      for (const r of RECEIVERS) {
        assert.equal(await count(sql, `${r}.jobs`), 2, r);
      }
      if (view) {
        const sent = await sql`select message_id from queue.messages`;
        assert.equal(sent.length, 2);
        await assertStreamHolds(
          view,
          toEach(sent.map((m) => m.message_id), RECEIVERS),
        );
        await assertDelivered(
          view,
          Object.fromEntries(RECEIVERS.map((r) => [r, 2])),
        );
      }
    });
  },
}];
