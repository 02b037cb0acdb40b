/**
 * The suite's own small services, made with the same
 * platform.create_outbox_with_indexes / create_inbox functions as any user
 * of the core makes its own:
 *
 * - t_sender.orders: the sender's own state; placing an order appends
 *   OrderPlaced to t_sender.outbox in the same transaction.
 * - t_recv_{a,b,c}.jobs: one job per order (unique), the receiver's effect.
 */
import type { Sql } from "../../db/connect.ts";
import { asService } from "../../db/service.ts";
import { memoryLogger } from "../../log/mod.ts";
import { append, type Envelope, newEnvelope } from "../../outbox/mod.ts";
import { Dispatcher } from "../../delivery/mod.ts";
import type { Routing } from "../../ledger/mod.ts";
import {
  type Apply,
  inboxBatchHandler,
  inboxHandler,
  Refused,
} from "../../inbox/mod.ts";
import { faultyReceiver, pgFaults } from "../../faults/mod.ts";

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

/** A tenant row; returns its id. */
export async function createTenant(sql: Sql, name = "test"): Promise<string> {
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
 * Many orders of one tenant in one sender transaction: the orders, then one
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
 * platform.faults accepts letters only, so the receiver's name is
 * camel-cased.
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
