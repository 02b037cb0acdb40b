/**
 * A redrive's dry run previews each dead letter at its receiver: the
 * kitchen's real apply, in a transaction that is always rolled back. Six
 * kitchen dead letters, each made to meet its receiver in another state:
 * one that applies, one that waits for its card (409), one the kitchen
 * refuses (a card of another message), one its inbox has, one past the
 * replay horizon, and one whose apply would wait on another transaction's
 * lock. The preview names each, and no row of any receiver, queue or
 * outbox changes, counted table by table. In split mode too.
 */
import assert from "node:assert/strict";
import type { Sql } from "../lib/db/connect.ts";
import {
  deadLettersSettle,
  payVia,
  placeOrderVia,
  setFaults,
  signIn,
  type TestBakery,
  withTestBakery,
} from "./_app.ts";
import { SENDERS, SUBSCRIBERS } from "../services/routing.ts";

interface Previewed {
  id: number;
  messageId: string;
  subscriber: string;
  outcome: string;
  detail: string;
}

/** Every row of every table of the services and the queue, hashed by table. */
async function everyRow(t: TestBakery): Promise<Record<string, string>> {
  const hashes: Record<string, string> = {};
  const schemas = [...new Set([...SENDERS, ...SUBSCRIBERS])];
  const read = async (sql: Sql, schema: string) => {
    const tables = await sql<{ name: string }[]>`
      select table_name as name from information_schema.tables
       where table_schema = ${schema} and table_type = 'BASE TABLE'
       order by 1`;
    for (const { name } of tables) {
      // The workers' heartbeats change by themselves every few seconds.
      if (`${schema}.${name}` === "queue.workers") continue;
      const [row] = await sql<{ hash: string | null }[]>`
        select md5(string_agg(r::text, ',' order by r::text)) as hash
          from ${sql(`${schema}.${name}`)} r`;
      hashes[`${schema}.${name}`] = row.hash ?? "empty";
    }
  };
  for (const schema of schemas) await read(t.at(schema), schema);
  for (const sender of SENDERS) await read(t.at(sender), "queue");
  return hashes;
}

async function previewOf(t: TestBakery) {
  const client = t.client({ checkAnswers: true });
  const { sandboxId } = await signIn(client, "Preview shift");
  await setFaults(client, { kitchenRefuses: true });
  const paid = await placeOrderVia(client);
  await payVia(client, paid.orderId);
  const others = [];
  for (let i = 0; i < 4; i++) {
    others.push((await placeOrderVia(client)).orderId);
  }
  const dead = await deadLettersSettle(client, 6, "subscriber=kitchen", 30_000);
  await setFaults(client, { kitchenRefuses: false });
  const of = (orderId: string, type = "OrderPlaced") =>
    dead.find((d) => d.orderId === orderId && d.eventType === type)!;
  const [refused, duplicate, old, locked] = others;
  const kitchen = t.at("kitchen");

  // The kitchen holds a card of another message for `refused`, and has
  // `duplicate`'s message in its inbox already.
  await kitchen`
    insert into kitchen.cards (order_id, tenant_id, state, version, items, day,
                               placed_message_id)
    values (${refused}, ${sandboxId}, 'new', 1, '[]', current_date,
            ${crypto.randomUUID()})`;
  await kitchen`
    insert into kitchen.inbox (message_id, tenant_id, type, status, outcome)
    values (${of(duplicate).messageId}, ${sandboxId}, 'OrderPlaced', 200,
            '{"card":"new"}')`;
  // `old`'s message is past the kitchen's replay horizon: stored as if
  // it had waited 400 days (a stored envelope is immutable, so the test
  // steps round the trigger that says so).
  await t.at(SENDERS[0]).begin(async (tx) => {
    await tx`alter table queue.messages disable trigger messages_immutable`;
    await tx`
      update queue.messages
         set envelope = jsonb_set(envelope, '{occurredAt}',
                                  to_jsonb((now() - interval '400 days')::text))
       where message_id = ${of(old).messageId}`;
    await tx`alter table queue.messages enable trigger messages_immutable`;
  });

  // Another transaction is making `locked`'s card and holds its key: the
  // preview's insert would wait for it.
  const holding = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  const holder = kitchen.begin(async (tx) => {
    await tx`
      insert into kitchen.cards (order_id, tenant_id, state, version, items,
                                 day, placed_message_id)
      values (${locked}, ${sandboxId}, 'new', 1, '[]', current_date, null)`;
    holding.resolve();
    await release.promise;
    throw new Error("rolled back on purpose");
  }).catch(() => {});
  await holding.promise;

  const before = await everyRow(t);
  const { status, body } = await client.json<{
    count: number;
    preview: Previewed[];
  }>("POST", "/api/console/dead-letters/redrive", {
    subscriber: "kitchen",
    dryRun: true,
  });
  release.resolve();
  await holder;
  assert.equal(status, 200, JSON.stringify(body));
  assert.equal(body.count, 6);
  const outcome = (d: { messageId: string }) =>
    body.preview.find((p) => p.messageId === d.messageId)?.outcome;
  assert.deepEqual(
    {
      applies: outcome(of(paid.orderId)),
      waits: outcome(of(paid.orderId, "OrderPaid")),
      refused: outcome(of(refused)),
      duplicate: outcome(of(duplicate)),
      old: outcome(of(old)),
      locked: outcome(of(locked)),
    },
    {
      applies: "apply",
      waits: "not_yet",
      refused: "refused",
      duplicate: "duplicate",
      old: "beyond_horizon",
      locked: "fail",
    },
    JSON.stringify(body.preview, null, 1),
  );
  const detail = (d: { messageId: string }) =>
    body.preview.find((p) => p.messageId === d.messageId)!.detail;
  assert.match(detail(of(paid.orderId, "OrderPaid")), /no card for order/);
  assert.match(detail(of(refused)), /already has a card/);
  assert.match(detail(of(locked)), /would wait/);
  // Nothing changed anywhere: the previews rolled back, applied or not.
  assert.deepEqual(await everyRow(t), before);
}

Deno.test("redrive preview: each dead letter's outcome at its receiver, and nothing changes", async () => {
  await withTestBakery(previewOf);
});

Deno.test("redrive preview in split mode: each receiver's own database, and nothing changes", async () => {
  await withTestBakery(previewOf, { SERVICE_DATABASES: "split" });
});
