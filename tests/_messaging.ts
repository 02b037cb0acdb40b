/**
 * A small test sender and three test receivers, not the bakery, for testing
 * lib/outbox, lib/relay, lib/queue and lib/inbox. They are made with the same
 * platform.create_outbox / create_inbox functions as the real services.
 *
 * - t_sender.orders: the sender's own state; placing an order appends
 *   OrderPlaced to t_sender.outbox in the same transaction.
 * - t_recv_{a,b,c}.jobs: one job per order (unique), the receiver's effect.
 */
import type { Sql } from "../lib/db/connect.ts";
import { asService } from "../lib/db/service.ts";
import { memoryLogger } from "../lib/log/mod.ts";
import { append, type Envelope, newEnvelope } from "../lib/outbox/mod.ts";
import { Dispatcher, PgQueue, type Routing } from "../lib/queue/mod.ts";
import { inboxHandler, Refused } from "../lib/inbox/mod.ts";
import { pgFaults } from "../lib/faults/mod.ts";
import { type MessagingOptions, startMessaging } from "../lib/workers/mod.ts";

export const SENDER = "t_sender";
export const RECEIVERS = ["t_recv_a", "t_recv_b", "t_recv_c"] as const;
export const ROUTING: Routing = { OrderPlaced: [...RECEIVERS] };

/** Creates the test services' roles (cluster-wide, once), schemas and tables. */
export async function createTestServices(sql: Sql) {
  for (const s of [SENDER, ...RECEIVERS]) {
    // Roles belong to the cluster: another test file may have made them.
    await sql`create role ${sql(s)} nologin`.catch((e) => {
      if (!["42710", "23505"].includes(e.code)) throw e;
    });
    await sql`create schema ${sql(s)}`;
    await sql`grant usage on schema ${sql(s)} to ${sql(s)}`;
    await sql`grant usage on schema platform to ${sql(s)}`;
    await sql`grant select on platform.sandboxes, platform.faults to ${sql(s)}`;
    await sql`alter default privileges in schema ${sql(s)}
      grant select, insert, update, delete on tables to ${sql(s)}`;
    await sql`alter default privileges in schema ${sql(s)}
      grant usage, select on sequences to ${sql(s)}`;
  }
  await sql`select platform.create_outbox(${SENDER})`;
  await sql`create table t_sender.orders (
    id text primary key, sandbox_id uuid not null, note text)`;
  await sql`select platform.enable_sandbox_rls('t_sender.orders')`;
  for (const r of RECEIVERS) {
    await sql`select platform.create_inbox(${r})`;
    await sql`create table ${sql(r + ".jobs")} (
      order_id text primary key, sandbox_id uuid not null,
      message_id uuid not null, applied_at timestamptz not null default now())`;
    await sql`select platform.enable_sandbox_rls(${r + ".jobs"})`;
  }
}

/** A sandbox row; returns its id. */
export async function createSandbox(sql: Sql, name = "test"): Promise<string> {
  const [row] = await sql<{ id: string }[]>`
    insert into platform.sandboxes (name) values (${name}) returning id`;
  return row.id;
}

/** The sender's command: an order and its OrderPlaced, in one transaction. */
export async function placeOrder(
  sql: Sql,
  sandboxId: string,
  orderId: string,
  options: { failBeforeCommit?: boolean; occurredAt?: string } = {},
): Promise<Envelope> {
  const envelope = newEnvelope({
    type: "OrderPlaced",
    aggregateId: orderId,
    aggregateVersion: 1,
    sandboxId,
    payload: { orderId },
  });
  if (options.occurredAt) envelope.occurredAt = options.occurredAt;
  await asService(sql, SENDER, { sandboxId }, async (tx) => {
    await tx
      .sql`insert into t_sender.orders (id, sandbox_id) values (${orderId}, ${sandboxId})`;
    await append(tx, [envelope]);
    if (options.failBeforeCommit) throw new Error("failure before commit");
  });
  return envelope;
}

/** Receivers: one job per order; a second message for the same order is refused. */
export function receiverApply(service: string) {
  return async (
    tx: Parameters<Parameters<typeof asService>[3]>[0],
    envelope: Envelope,
  ) => {
    const orderId = envelope.aggregateId;
    const jobs = tx.sql(`${service}.jobs`);
    const inserted = await tx.sql`
      insert into ${jobs} (order_id, sandbox_id, message_id)
      values (${orderId}, ${envelope.sandboxId}, ${envelope.messageId})
      on conflict (order_id) do nothing returning order_id`;
    if (inserted.length === 0) {
      throw new Refused(`a job for order ${orderId} exists already`);
    }
    return { job: orderId };
  };
}

export const ORIGIN = "http://receivers.test";

/** A dispatcher that serves the three test receivers in process. */
export function testDispatcher(sql: Sql, options: { slowMs?: number } = {}) {
  const { logger } = memoryLogger("error");
  const handlers = new Map(RECEIVERS.map((r) => [
    r,
    inboxHandler({
      sql,
      service: r,
      label: r,
      apply: receiverApply(r),
      replayHorizonDays: 30,
      faults: pgFaults(sql),
      log: logger,
      refusesFault: `${r}Refuses`,
      slowFault: `${r}Slow`,
      slowMs: options.slowMs,
    }),
  ]));
  return new Dispatcher().register(ORIGIN, (request) => {
    const name = new URL(request.url).pathname.slice(1);
    const handler = handlers.get(name as typeof RECEIVERS[number]);
    return handler
      ? handler(request)
      : new Response("no such receiver", { status: 404 });
  });
}

export const SUBSCRIBERS = Object.fromEntries(
  RECEIVERS.map((r) => [r, { url: `${ORIGIN}/${r}`, label: r }]),
);

/** Starts relays and consumers for the test services. */
export function startTestWorkers(
  db: { url: string; sql: Sql },
  overrides: Partial<MessagingOptions> = {},
) {
  const { logger, lines } = memoryLogger("info");
  const messaging = startMessaging({
    url: db.url,
    sql: db.sql,
    log: logger,
    faults: pgFaults(db.sql),
    senders: [SENDER],
    queue: new PgQueue(db.sql, ROUTING),
    dispatcher: testDispatcher(db.sql),
    subscribers: SUBSCRIBERS,
    pollMs: 200,
    relayRetryMs: 100,
    retryDelaysMs: [50, 100, 150],
    timeoutMs: 2000,
    ...overrides,
  });
  return { messaging, lines };
}

/** Polls `check` until it returns true, or fails after `timeoutMs`. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 10_000,
) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/** Counts rows with the superuser pool (no RLS). */
export async function count(
  sql: Sql,
  table: string,
  where = sql`true`,
): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from ${sql(table)} where ${where}`;
  return row.n;
}
