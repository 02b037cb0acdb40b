/**
 * A small test sender and three test receivers, not the bakery, for testing
 * lib/outbox, lib/relay, lib/ledger, lib/carriers, lib/delivery and lib/inbox. They are made with the same
 * platform.create_outbox_with_indexes / create_inbox functions as the real
 * services.
 *
 * - t_sender.orders: the sender's own state; placing an order appends
 *   OrderPlaced to t_sender.outbox in the same transaction.
 * - t_recv_{a,b,c}.jobs: one job per order (unique), the receiver's effect.
 *
 * The test workers run on either transport (tests/core/_transport.ts): the
 * PostgreSQL queue by default, or NATS JetStream with `transport:
 * "jetstream"`.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { asService, poolOf } from "../../lib/db/service.ts";
import { memoryLogger } from "../../lib/log/mod.ts";
import { append, type Envelope, newEnvelope } from "../../lib/outbox/mod.ts";
import { Dispatcher } from "../../lib/delivery/mod.ts";
import { Ledger, type Queue, type Routing } from "../../lib/ledger/mod.ts";
import { type Moved, PgMove, type Shortcut } from "../../lib/carriers/mod.ts";
import {
  type Apply,
  inboxBatchHandler,
  inboxHandler,
  Refused,
} from "../../lib/inbox/mod.ts";
import { faultyReceiver, pgFaults } from "../../lib/faults/mod.ts";
import type { ClaimedDelivery } from "../../lib/ledger/mod.ts";
import { claimBatch } from "../../lib/ledger/deliveries_sql.ts";
import {
  type Messaging,
  type MessagingOptions,
  startMessaging,
} from "../../lib/workers/mod.ts";
import {
  openTestTransport,
  type TestTransport,
  type TransportName,
} from "./_transport.ts";

export const SENDER = "t_sender";
export const RECEIVERS = ["t_recv_a", "t_recv_b", "t_recv_c"] as const;
export type Receiver = typeof RECEIVERS[number];
export const ROUTING: Routing = { OrderPlaced: [...RECEIVERS] };

/**
 * A service in the database of `sql`: its role (cluster-wide, made once),
 * its schema, and its rights there and on the tenants.
 */
export async function createService(sql: Sql, s: string) {
  // Roles belong to the cluster: another test file may have made them.
  await sql`create role ${sql(s)} nologin`.catch((e) => {
    if (!["42710", "23505"].includes(e.code)) throw e;
  });
  await sql`create schema ${sql(s)}`;
  await sql`grant usage on schema ${sql(s)} to ${sql(s)}`;
  await sql`grant usage on schema platform to ${sql(s)}`;
  await sql`grant select on platform.tenants, platform.faults to ${sql(s)}`;
  await sql`alter default privileges in schema ${sql(s)}
    grant select, insert, update, delete on tables to ${sql(s)}`;
  await sql`alter default privileges in schema ${sql(s)}
    grant usage, select on sequences to ${sql(s)}`;
}

/**
 * Creates the test services' roles, schemas and tables: of `services`
 * alone, when each database holds only its own.
 */
export async function createTestServices(
  sql: Sql,
  services: readonly string[] = [SENDER, ...RECEIVERS],
) {
  for (const s of services) await createService(sql, s);
  if (services.includes(SENDER)) {
    await sql`select platform.create_outbox_with_indexes(${SENDER})`;
    await sql`create table t_sender.orders (
      id text primary key, tenant_id uuid not null, note text)`;
    await sql`select platform.enable_tenant_rls('t_sender.orders')`;
  }
  for (const r of RECEIVERS.filter((r) => services.includes(r))) {
    await sql`select platform.create_inbox(${r})`;
    await sql`create table ${sql(r + ".jobs")} (
      order_id text primary key, tenant_id uuid not null,
      message_id uuid not null, applied_at timestamptz not null default now())`;
    await sql`select platform.enable_tenant_rls(${r + ".jobs"})`;
  }
}

/** A sandbox row; returns its id. */
export async function createSandbox(sql: Sql, name = "test"): Promise<string> {
  const [row] = await sql<{ id: string }[]>`
    insert into platform.tenants (name) values (${name}) returning id`;
  return row.id;
}

/** The test sender's OrderPlaced for `orderId`, not yet stored anywhere. */
export function orderPlacedEnvelope(
  tenantId: string,
  orderId: string,
): Envelope {
  return newEnvelope({
    type: "OrderPlaced",
    aggregateId: orderId,
    aggregateVersion: 1,
    tenantId: tenantId,
    payload: { orderId },
  });
}

/** The sender's command: an order and its OrderPlaced, in one transaction. */
export async function placeOrder(
  sql: Sql,
  tenantId: string,
  orderId: string,
  options: { failBeforeCommit?: boolean; occurredAt?: string } = {},
): Promise<Envelope> {
  const envelope = orderPlacedEnvelope(tenantId, orderId);
  if (options.occurredAt) envelope.occurredAt = options.occurredAt;
  await asService(sql, SENDER, { tenantId }, async (tx) => {
    await tx
      .sql`insert into t_sender.orders (id, tenant_id) values (${orderId}, ${tenantId})`;
    await append(tx, [envelope]);
    if (options.failBeforeCommit) throw new Error("failure before commit");
  });
  return envelope;
}

/**
 * Many orders of one sandbox in one sender transaction: the orders, then one
 * `append` with all their OrderPlaced envelopes. Returns the envelopes.
 */
export async function placeOrders(
  sql: Sql,
  tenantId: string,
  orderIds: string[],
): Promise<Envelope[]> {
  const envelopes = orderIds.map((orderId) =>
    newEnvelope({
      type: "OrderPlaced",
      aggregateId: orderId,
      aggregateVersion: 1,
      tenantId: tenantId,
      payload: { orderId },
    })
  );
  await asService(sql, SENDER, { tenantId }, async (tx) => {
    await tx.sql`
      insert into t_sender.orders (id, tenant_id)
      select id, ${tenantId} from unnest(${orderIds}::text[]) as id`;
    await append(tx, envelopes);
  });
  return envelopes;
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
      insert into ${jobs} (order_id, tenant_id, message_id)
      values (${orderId}, ${envelope.tenantId}, ${envelope.messageId})
      on conflict (order_id) do nothing returning order_id`;
    if (inserted.length === 0) {
      throw new Refused(`a job for order ${orderId} exists already`);
    }
    return { job: orderId };
  };
}

/**
 * The name of a test receiver's fault switch: "tRecvARefuses" for t_recv_a.
 * platform.faults accepts letters only, so the receiver's name is camel-cased
 * (the bakery's receivers have plain names: "kitchenRefuses").
 */
export function receiverFault(
  receiver: Receiver,
  what: "Refuses" | "Slow",
): string {
  return receiver.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()) +
    what;
}

export const ORIGIN = "http://receivers.test";

/** One answer a test receiver gave, as the consumer got it. */
export interface Answer {
  receiver: Receiver;
  messageId: string;
  status: number;
  body: Record<string, unknown>;
}

export interface TestDispatcherOptions {
  slowMs?: number;
  /** Replaces a receiver's `apply` (e.g. one that throws). */
  apply?: Partial<Record<Receiver, Apply>>;
  /** Called with every answer a receiver gives. */
  onAnswer?: (answer: Answer) => void;
}

/**
 * A dispatcher that serves the three test receivers in process, each with
 * its single endpoint (`/<receiver>`) and its batch endpoint
 * (`/<receiver>/batch`). `onAnswer` hears each message's answer, a batch's
 * one by one.
 */
export function testDispatcher(sql: Sql, options: TestDispatcherOptions = {}) {
  const { logger } = memoryLogger("error");
  const handlers = new Map<string, (request: Request) => Promise<Response>>();
  for (const r of RECEIVERS) {
    const receiver = {
      sql,
      service: r,
      label: r,
      apply: options.apply?.[r] ?? receiverApply(r),
      replayHorizonDays: 30,
      log: logger,
      wrap: faultyReceiver(pgFaults(sql), {
        label: r,
        refuses: receiverFault(r, "Refuses"),
        slow: receiverFault(r, "Slow"),
        slowMs: options.slowMs,
      }),
    };
    handlers.set(r, inboxHandler(receiver));
    handlers.set(`${r}/batch`, inboxBatchHandler(receiver));
  }
  return new Dispatcher().register(ORIGIN, async (request) => {
    const path = new URL(request.url).pathname.slice(1);
    const handler = handlers.get(path);
    if (!handler) return new Response("no such receiver", { status: 404 });
    const receiver = path.replace(/\/batch$/, "") as Receiver;
    const sent = options.onAnswer ? await request.clone().json() : undefined;
    const response = await handler(request);
    if (options.onAnswer) {
      const body = await response.clone().json();
      if (!path.endsWith("/batch")) {
        options.onAnswer({
          receiver,
          messageId: request.headers.get("x-message-id") ?? "",
          status: response.status,
          body,
        });
      } else if (response.status === 200) {
        for (const r of body.results) {
          options.onAnswer({ receiver, ...r });
        }
      } else {
        for (const m of sent.messages) {
          options.onAnswer({
            receiver,
            messageId: m.messageId,
            status: response.status,
            body,
          });
        }
      }
    }
    return response;
  });
}

export const SUBSCRIBERS = Object.fromEntries(
  RECEIVERS.map((r) => [r, {
    url: `${ORIGIN}/${r}`,
    batchUrl: `${ORIGIN}/${r}/batch`,
    label: r,
  }]),
);

/** What the test workers take besides startMessaging's own options. */
export interface TestWorkersOptions
  extends Partial<Omit<MessagingOptions, "transport">> {
  /** The transport the relay publishes to (default postgres). */
  transport?: TransportName;
  /**
   * JetStream: the stream, which the caller drops; by default one of the
   * workers' own, dropped when they stop.
   */
  stream?: string;
  /** JetStream: the consumers' AckWait (default TEST_ACK_WAIT_MS). */
  ackWaitMs?: number;
  /** Wraps the transport's queue, e.g. to record what the relay published. */
  wrapQueue?: (queue: Queue) => Queue;
  /** Wraps the relay's move into the PostgreSQL queue (when it has one). */
  wrapShortcut?: (shortcut: Shortcut) => Shortcut;
}

/** The test workers: the messaging, and the transport it runs on. */
export interface TestMessaging extends Messaging {
  transport: TestTransport;
}

/**
 * Starts relays and consumers for the test services, on `transport`. Over
 * JetStream the workers connect to the stream (with one durable consumer
 * per test receiver) and run the broker's consumers in place of the
 * PostgreSQL queue's; stop() also closes that connection.
 */
export function startTestWorkers(
  db: { url: string; sql: Sql },
  options: TestWorkersOptions = {},
) {
  const { logger, lines } = memoryLogger("info");
  const {
    transport: name = "postgres",
    stream,
    ackWaitMs,
    wrapQueue,
    wrapShortcut,
    ...overrides
  } = options;
  const messaging = (async (): Promise<TestMessaging> => {
    const transport = await openTestTransport(name, db.sql, {
      routing: ROUTING,
      subscribers: RECEIVERS,
      stream,
      ackWaitMs,
    });
    let m: Messaging;
    try {
      m = await startMessaging({
        url: db.url,
        sql: db.sql,
        log: logger,
        faults: pgFaults(db.sql),
        senders: [SENDER],
        transport: {
          ...transport.transport,
          queue: wrapQueue ? wrapQueue(transport.queue) : transport.queue,
          shortcut: transport.shortcut && wrapShortcut
            ? wrapShortcut(transport.shortcut)
            : transport.shortcut,
        },
        dispatcher: testDispatcher(db.sql),
        subscribers: SUBSCRIBERS,
        pollMs: 200,
        relayRetryMs: 100,
        retryDelaysMs: [50, 100, 150],
        timeoutMs: 2000,
        ...overrides,
      });
    } catch (error) {
      await transport.close();
      throw error;
    }
    return {
      ...m,
      transport,
      stop: async () => {
        try {
          await m.stop();
        } finally {
          await transport.close();
        }
      },
    };
  })();
  return { messaging, lines };
}

/** Polls `check` until it returns true, or fails after `timeoutMs`. */
export async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/**
 * Counts rows with the superuser pool (no RLS), in the database of the
 * table's schema: a service's own when `sql` routes it to one
 * (lib/db/service.ts).
 */
export async function count(
  sql: Sql,
  table: string,
  where = sql`true`,
): Promise<number> {
  const at = poolOf(sql, table.split(".")[0]);
  const [row] = await at<{ n: number }[]>`
    select count(*)::int as n from ${at(table)} where ${where}`;
  return row.n;
}

/**
 * Starts workers, runs `fn`, and always stops them, so that a failing
 * assertion never leaves a loop or a listener running.
 */
export async function withWorkers(
  db: { url: string; sql: Sql },
  options: TestWorkersOptions,
  fn: (
    workers: { messaging: TestMessaging; lines: LogLine[] },
  ) => Promise<void>,
) {
  const { messaging, lines } = startTestWorkers(db, options);
  const m = await messaging;
  try {
    await fn({ messaging: m, lines });
  } finally {
    await m.stop();
  }
}

/** A structured log line as the memory logger keeps it. */
export type LogLine = Record<string, unknown>;

/** Waits until every test receiver holds `jobs` jobs. */
export async function waitForJobs(sql: Sql, jobs: number, timeoutMs?: number) {
  await waitFor(`${jobs} job(s) at every receiver`, async () => {
    for (const r of RECEIVERS) {
      if (await count(sql, `${r}.jobs`) !== jobs) return false;
    }
    return true;
  }, timeoutMs);
}

/** Waits until `n` deliveries are in `state`. */
export async function waitForDeliveries(
  sql: Sql,
  state: string,
  n: number,
  timeoutMs?: number,
) {
  await waitFor(
    `${n} deliveries ${state}`,
    async () =>
      await count(sql, "queue.deliveries", sql`state = ${state}`) === n,
    timeoutMs,
  );
}

/**
 * The relay's move into the test queue (a Ledger), keeping every move it
 * makes in `moves`.
 */
export function recordingShortcut(
  sql: Sql,
): { shortcut: Shortcut; moves: Moved[] } {
  const inner = new PgMove(new Ledger(sql, ROUTING));
  const moves: Moved[] = [];
  const shortcut: Shortcut = {
    move: async (service, limit, options) => {
      const moved = await inner.move(service, limit, options);
      moves.push(moved);
      return moved;
    },
  };
  return { shortcut, moves };
}

/**
 * One claim of up to `limit` deliveries by `owner`, holding nothing else
 * (claimBatch with an empty share), as a consumer's first claim is.
 */
export async function claimDeliveries(
  sql: Sql,
  owner: string,
  limit: number,
  leaseMs: number,
): Promise<ClaimedDelivery[]> {
  return (await claimBatch(sql, owner, {
    limit,
    leaseMs,
    round: {
      after: null,
      perTenant: limit,
    },
  })).claimed;
}
