/**
 * Retention (lib/ledger/retention.ts): finished work older than the replay
 * horizon and a margin goes; what a sender may still retry stays. Rows are
 * aged by moving their times back, as 40 days would.
 */
import assert from "node:assert/strict";
import type { Sql } from "../../lib/db/connect.ts";
import { receiveOnce } from "../../lib/inbox/mod.ts";
import { type Envelope, newEnvelope } from "../../lib/outbox/mod.ts";
import {
  pruneHistory,
  pruneInboxes,
  pruneQueue,
} from "../../lib/ledger/retention.ts";
import { withTestDatabase } from "./_db.ts";
import {
  count,
  createSandbox,
  createTestServices,
  receiverApply,
} from "./_messaging.ts";

const RECEIVER = "t_recv_a";
const HORIZON_DAYS = 30;
const DAY_MS = 86_400_000;
const options = { replayHorizonDays: HORIZON_DAYS };

/** A message applied by the receiver, with its queue copy and delivery. */
async function delivered(
  sql: Sql,
  tenantId: string,
  state: "done" | "dead",
): Promise<Envelope> {
  const envelope = newEnvelope({
    type: "OrderPlaced",
    aggregateId: crypto.randomUUID(),
    aggregateVersion: 1,
    tenantId: tenantId,
    payload: {},
  });
  const received = await receiveOnce(
    sql,
    RECEIVER,
    envelope,
    receiverApply(RECEIVER),
    options,
  );
  assert.equal(received.status, 200);
  await sql`
    insert into queue.messages (message_id, tenant_id, source, type,
                                aggregate_id, envelope)
    values (${envelope.messageId}, ${tenantId}, 't_sender', ${envelope.type},
            ${envelope.aggregateId}, ${sql.json(envelope as never)})`;
  // A dead one was answered at last, but its delivery gave up before: an
  // operator may still redrive it.
  const [{ id }] = await sql<{ id: string }[]>`
    insert into queue.deliveries (tenant_id, message_id, subscriber, type,
      aggregate_id, state, attempts, done_at, dead_at, done_xid,
      last_started_at, last_status)
    values (${tenantId}, ${envelope.messageId}, ${RECEIVER}, ${envelope.type},
            ${envelope.aggregateId}, ${state}, 2,
            ${state === "done" ? sql`now()` : null},
            ${state === "dead" ? sql`now()` : null},
            ${state === "done" ? sql`'0'::xid8` : null}, now(), 200)
    returning id`;
  // Done and counted by the closure audit: its position is past every
  // delivery of xid 0.
  await sql`
    insert into queue.audit_positions (subscriber, done_xid, id)
    values (${RECEIVER}, '0', ${Number.MAX_SAFE_INTEGER})
    on conflict do nothing`;
  await sql`
    insert into queue.attempts (tenant_id, delivery_id, attempt, started_at,
                                duration_ms, status, outcome, error)
    values (${tenantId}, ${id}, 1, now(), 5, 503, 'retry', 'busy')`;
  return envelope;
}

/** Moves every time of `envelope`'s rows back by `days`. */
async function age(sql: Sql, envelope: Envelope, days: number) {
  const back = sql`${days} * interval '1 day'`;
  const id = envelope.messageId;
  await sql`update queue.messages set published_at = published_at - ${back}
             where message_id = ${id}`;
  await sql`
    update queue.deliveries
       set created_at = created_at - ${back},
           done_at = done_at - ${back}, dead_at = dead_at - ${back},
           last_started_at = last_started_at - ${back}
     where message_id = ${id}`;
  await sql`
    update queue.attempts set started_at = started_at - ${back}
     where delivery_id in (select id from queue.deliveries
                            where message_id = ${id})`;
  await sql`update ${sql(`${RECEIVER}.inbox`)}
               set received_at = received_at - ${back}
             where message_id = ${id}`;
}

/** The envelope as it reads `days` later: made that long ago. */
function later(envelope: Envelope, days: number): Envelope {
  const made = Date.parse(envelope.occurredAt) - days * DAY_MS;
  return { ...envelope, occurredAt: new Date(made).toISOString() };
}

const rowsOf = async (sql: Sql, envelope: Envelope) => {
  const id = envelope.messageId;
  return {
    messages: await count(sql, "queue.messages", sql`message_id = ${id}`),
    deliveries: await count(sql, "queue.deliveries", sql`message_id = ${id}`),
    attempts: await count(
      sql,
      "queue.attempts",
      sql`delivery_id in (select id from queue.deliveries
                           where message_id = ${id})`,
    ),
    inbox: await count(sql, `${RECEIVER}.inbox`, sql`message_id = ${id}`),
  };
};

Deno.test("retention: old finished work goes, and an old repeat is refused as too old; what is recent or may be retried stays and is answered from the inbox", async () => {
  await withTestDatabase(async (db) => {
    const { sql } = db;
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const old = await delivered(sql, tenantId, "done");
    const recent = await delivered(sql, tenantId, "done");
    const oldDead = await delivered(sql, tenantId, "dead");
    await age(sql, old, 40);
    await age(sql, oldDead, 40);
    await age(sql, recent, 10);

    const pruned = await pruneHistory(sql, {
      before: new Date(Date.now() - (HORIZON_DAYS + 7) * DAY_MS),
      subscribers: [RECEIVER],
      batch: 1, // every row a batch of its own: the loop is exercised
    });
    assert.deepEqual(pruned, {
      deliveries: 1,
      attempts: 1,
      messages: 1,
      inboxes: { [RECEIVER]: 1 },
    });
    assert.deepEqual(await rowsOf(sql, old), {
      messages: 0,
      deliveries: 0,
      attempts: 0,
      inbox: 0,
    });
    // Dead: a sender may still retry it, so its inbox row stays too.
    const kept = { messages: 1, deliveries: 1, attempts: 1, inbox: 1 };
    assert.deepEqual(await rowsOf(sql, oldDead), kept);
    assert.deepEqual(await rowsOf(sql, recent), kept);

    // The old message again, 40 days on: its inbox row is gone, and the
    // horizon refuses it instead of applying it a second time.
    const jobs = await count(sql, `${RECEIVER}.jobs`);
    const again = await receiveOnce(
      sql,
      RECEIVER,
      later(old, 40),
      receiverApply(RECEIVER),
      options,
    );
    assert.equal(again.status, 422);
    assert.match(String(again.body.reason), /replay horizon of 30 days/);
    assert.equal(await count(sql, `${RECEIVER}.jobs`), jobs);
    // Inside the horizon, a repeat is answered from the inbox.
    const repeat = await receiveOnce(
      sql,
      RECEIVER,
      later(recent, 10),
      receiverApply(RECEIVER),
      options,
    );
    assert.equal(repeat.status, 200);
    assert.equal(repeat.duplicate, true);
    assert.equal(await count(sql, `${RECEIVER}.jobs`), jobs);

    // A second pass finds nothing more.
    const none = await pruneHistory(sql, {
      before: new Date(Date.now() - (HORIZON_DAYS + 7) * DAY_MS),
      subscribers: [RECEIVER],
    });
    assert.deepEqual(none, {
      deliveries: 0,
      attempts: 0,
      messages: 0,
      inboxes: { [RECEIVER]: 0 },
    });
  });
});

Deno.test("retention: an inbox whose queue is elsewhere asks it what is still owed, and keeps those rows", async () => {
  await withTestDatabase(async (db) => {
    const { sql } = db;
    await createTestServices(sql);
    const tenantId = await createSandbox(sql);
    const olds = [
      await delivered(sql, tenantId, "done"),
      await delivered(sql, tenantId, "done"),
      await delivered(sql, tenantId, "done"),
    ];
    const oldDead = await delivered(sql, tenantId, "dead");
    for (const e of [...olds, oldDead]) await age(sql, e, 40);
    const before = new Date(Date.now() - (HORIZON_DAYS + 7) * DAY_MS);
    // The queue and the inbox share this database, but the inbox is pruned
    // as if the queue were elsewhere: through the question alone.
    const asked: string[][] = [];
    const inboxes = await pruneInboxes(sql, {
      before,
      subscribers: [RECEIVER],
      batch: 2, // three batches: the cursor moves past the kept rows
      stillOwed: (subscriber, ids) => {
        assert.equal(subscriber, RECEIVER);
        asked.push([...ids]);
        return Promise.resolve(
          new Set(ids.filter((id) => id === oldDead.messageId)),
        );
      },
    });
    assert.deepEqual(inboxes, { [RECEIVER]: 3 });
    assert.equal(asked.flat().length, 4);
    assert.equal(await count(sql, `${RECEIVER}.inbox`), 1);
    assert.equal(
      await count(
        sql,
        `${RECEIVER}.inbox`,
        sql`message_id = ${oldDead.messageId}`,
      ),
      1,
    );
    // The queue's own part is pruned apart, and leaves the dead delivery.
    const queue = await pruneQueue(sql, { before });
    assert.deepEqual(queue, { deliveries: 3, attempts: 3, messages: 3 });
    assert.deepEqual((await rowsOf(sql, oldDead)).deliveries, 1);
  });
});
