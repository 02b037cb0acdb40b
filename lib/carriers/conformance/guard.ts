/**
 * The relay's loop guard: a tenant that has used up its automatic re-arms
 * for the day gets its failed rows parked (next attempt at infinity) with an
 * alarm, never dropped; the sender's next command flushes them. The guard
 * is the relay's, before the transport: over JetStream a refused send never
 * reaches the stream, and a row published again is stored once.
 */
import assert from "node:assert/strict";
import type { Sql } from "../../db/connect.ts";
import { createTenant, placeOrder, RECEIVERS, SENDER } from "./services.ts";
import { count, waitFor, waitForDeliveries, waitForJobs } from "./rows.ts";
import { setFault } from "../../faults/mod.ts";
import { RELAY_FAULTS } from "../../faults/mod.ts";
import { assertDelivered, assertStreamHolds, toEach } from "./broker.ts";
import type { Scenario } from "./harness.ts";

/**
 * Turns `fault` off; the sender's next command (order O2) flushes what it
 * still owes: both rows published, and the queue holds the two messages,
 * once each. Returns O2's envelope.
 */
async function clearAndFlush(
  sql: Sql,
  tenantId: string,
  fault: string,
  firstMessageId: string,
) {
  await setFault(sql, tenantId, fault, false);
  const second = await placeOrder(sql, tenantId, "O2");
  await waitFor("both rows published", async () =>
    await count(
      sql,
      "queue.messages",
      sql`tenant_id = ${tenantId} and source = ${SENDER}`,
    ) === 2);
  const messages = await sql`
    select message_id from queue.messages where tenant_id = ${tenantId}
     order by message_id`;
  assert.deepEqual(
    messages.map((m) => m.message_id).sort(),
    [firstMessageId, second.messageId].sort(),
  );
  return second;
}

const each = (n: number) => Object.fromEntries(RECEIVERS.map((r) => [r, n]));

export const guardScenarios: Scenario[] = [{
  name:
    "loop guard: the 101st re-arm of the day parks the row with an alarm; the next command flushes it and both are published",
  run: async ({ sql, tenantId, view, workers }) => {
    const other = await createTenant(sql, "other");
    await sql`
    insert into t_sender.relay_guard (tenant_id, day, rearms)
    values (${tenantId}, (now() at time zone 'utc')::date, 100)`;
    await setFault(sql, tenantId, RELAY_FAULTS.queueRefusesSends, true);
    await workers({}, async ({ lines }) => {
      const first = await placeOrder(sql, tenantId, "O1");
      await waitFor("the failed publish", async () => {
        const [row] = await sql`select attempts from t_sender.outbox`;
        return row.attempts >= 1;
      });
      const [parked] = await sql`
      select state, attempts, last_error, next_attempt_at = 'infinity' as parked
        from t_sender.outbox`;
      assert.deepEqual({ ...parked }, {
        state: "pending",
        attempts: 1,
        last_error: "the queue refused the send (queueRefusesSends fault)",
        parked: true,
      });
      const [guard] = await sql`
      select rearms from t_sender.relay_guard
       where tenant_id = ${tenantId}
         and day = (now() at time zone 'utc')::date`;
      assert.equal(guard.rearms, 101);
      const alarms = lines.filter((l) => l.event === "alarm_guard");
      assert.equal(alarms.length, 1);
      assert.equal(alarms[0].level, "error");
      assert.equal(alarms[0].tenantId, tenantId);
      assert.equal(alarms[0].service, SENDER);

      // Parked means no more automatic tries: another tenant's order goes
      // through while this row waits, and it is still there untouched.
      const x1 = await placeOrder(sql, other, "X1");
      await waitForDeliveries(sql, "done", 3);
      const [still] = await sql`
      select state, attempts, next_attempt_at = 'infinity' as parked
        from t_sender.outbox where message_id = ${first.messageId}`;
      assert.deepEqual({ ...still }, {
        state: "pending",
        attempts: 1,
        parked: true,
      });
      assert.equal(
        await count(sql, "queue.messages", sql`tenant_id = ${tenantId}`),
        0,
      );

      // The fault clears; the sender's next command flushes what it owes.
      const second = await clearAndFlush(
        sql,
        tenantId,
        RELAY_FAULTS.queueRefusesSends,
        first.messageId,
      );
      await waitForJobs(sql, 3);
      await waitForDeliveries(sql, "done", 9);
      // The parked row, flushed, was published at last: owed no more.
      assert.equal(
        await count(
          sql,
          "t_sender.outbox",
          sql`message_id = ${first.messageId}`,
        ),
        0,
      );
      assert.equal(
        await count(
          sql,
          "queue.messages",
          sql`message_id = ${first.messageId}`,
        ),
        1,
      );
      assert.equal(
        lines.filter((l) => l.event === "alarm_guard").length,
        1,
      );
      if (view) {
        const sent = [x1, first, second].map((e) => e.messageId);
        await assertStreamHolds(view, toEach(sent, RECEIVERS));
        await assertDelivered(view, each(3));
      }
    });
  },
}, {
  name:
    "loop guard: under the allowance a failed publish is retried after RELAY_RETRY_MS (not at the next poll), not parked",
  run: async ({ sql, tenantId, view, workers }) => {
    await setFault(sql, tenantId, RELAY_FAULTS.queueRefusesSends, true);
    // A poll far longer than the retry: only a relay that knows when its
    // retry is due tries again in time.
    const options = { relayRetryMs: 100, pollMs: 10_000 };
    await workers(options, async ({ lines }) => {
      const { messageId } = await placeOrder(sql, tenantId, "O1");
      const placed = performance.now();
      await waitFor("three failed publishes", async () => {
        const [row] = await sql`select attempts from t_sender.outbox`;
        return row.attempts >= 3;
      }, 5_000);
      const took = performance.now() - placed;
      assert.ok(took < 2_000, `three tries took ${took.toFixed(0)} ms`);
      const [row] = await sql`
      select state, next_attempt_at < 'infinity' as scheduled
        from t_sender.outbox`;
      assert.equal(row.scheduled, true);
      assert.ok(["pending", "claimed"].includes(row.state));
      assert.equal(lines.filter((l) => l.event === "alarm_guard").length, 0);

      await setFault(sql, tenantId, RELAY_FAULTS.queueRefusesSends, false);
      // No new command: the scheduled retry alone publishes it.
      await waitForJobs(sql, 1);
      // Published: owed no more, so the row is gone.
      assert.equal(await count(sql, "t_sender.outbox"), 0);
      // The refused sends never reached the broker: one copy, sent once.
      if (view) {
        await assertStreamHolds(view, toEach([messageId], RECEIVERS));
        await assertDelivered(view, each(1));
      }
    });
  },
}, {
  name:
    "loop guard: a relay that crashes before marking re-arms by its lease; each takeover counts, and the 101st parks the row with an alarm",
  run: async ({ sql, tenantId, view, workers }) => {
    await sql`
    insert into t_sender.relay_guard (tenant_id, day, rearms)
    values (${tenantId}, (now() at time zone 'utc')::date, 99)`;
    await setFault(sql, tenantId, RELAY_FAULTS.crashBeforeMark, true);
    const rearms = async () => {
      const [guard] = await sql`
      select rearms from t_sender.relay_guard
       where tenant_id = ${tenantId}
         and day = (now() at time zone 'utc')::date`;
      return guard.rearms;
    };
    await workers({ relayLeaseMs: 200 }, async ({ lines }) => {
      const crashes = () =>
        lines.filter((l) => l.event === "relay_crash_fault").length;
      const first = await placeOrder(sql, tenantId, "O1");
      await waitFor("the first publish", () => crashes() >= 1);
      // The lease runs out and the row is claimed again: the 100th re-arm,
      // still allowed, so it is published (and "crashes") once more.
      await waitFor("a second publish", () => crashes() >= 2);
      assert.equal(await rearms(), 100);
      // The next takeover is over the allowance: parked, with an alarm.
      await waitFor(
        "the alarm",
        () => lines.some((l) => l.event === "alarm_guard"),
      );
      assert.equal(await rearms(), 101);
      const [parked] = await sql`
      select state, attempts, last_error, lease_owner,
             next_attempt_at = 'infinity' as parked
        from t_sender.outbox`;
      assert.deepEqual({ ...parked }, {
        state: "pending",
        attempts: 1,
        last_error:
          "the relay's lease ran out before it marked the row published",
        lease_owner: null,
        parked: true,
      });
      const alarms = lines.filter((l) => l.event === "alarm_guard");
      assert.equal(alarms.length, 1);
      assert.equal(alarms[0].tenantId, tenantId);
      assert.equal(alarms[0].service, SENDER);
      assert.equal(crashes(), 2);
      // Published all along: the receivers have it, once.
      await waitForJobs(sql, 1);
      await waitForDeliveries(sql, "done", 3);

      // The fault clears; the next command flushes the parked row, and the
      // queue ignores the repeat.
      const second = await clearAndFlush(
        sql,
        tenantId,
        RELAY_FAULTS.crashBeforeMark,
        first.messageId,
      );
      await waitForJobs(sql, 2);
      assert.equal(crashes(), 2);
      // Over JetStream the three publishes of O1 (two crashed, one flushed)
      // are one message per receiver, delivered once.
      if (view) {
        const sent = [first, second].map((e) => e.messageId);
        await assertStreamHolds(view, toEach(sent, RECEIVERS));
        await assertDelivered(view, each(2));
      }
    });
  },
}];
