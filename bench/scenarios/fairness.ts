/**
 * fairness: one sandbox's backlog does not hold up another sandbox's paid
 * order (the hardening issue: B's paid order reaches all six receivers
 * within 2 s while A's backlog drains). The whole bakery's messaging runs in
 * this process as in steady (bench/probe.ts, one pool of 10 shared with the
 * load), with the production delivery settings: a 5 s timeout, retries
 * after 1, 5 and 25 s.
 *
 * Two phases, each on a fresh database:
 * 1. slow: sandbox A switches on "kitchenSlow" (its kitchen answers after
 *    6 s, past the timeout) and "duplicateDeliveries" (each of its
 *    deliveries is sent twice), then places and pays `slowOrders` orders.
 * 2. plain: the queue refuses A's sends ("queueRefusesSends") while A places
 *    and pays `plainOrders` orders; then the switch goes off and one more
 *    paid order of A (the relay takes a sandbox's waiting rows with its new
 *    ones) puts them all in the queue at once.
 *
 * Once A's backlog is in the queue, sandbox B (no fault) places and pays
 * `quietOrders` orders one after another. Each is placed, its OrderPlaced
 * applied (a customer pays after the checkout page), then paid, and timed
 * from the payment webhook's commit to the sixth receiver answering 200 for
 * its OrderPaid; the six inboxes are checked to hold them. A's open
 * deliveries are counted after each of B's orders: had A's backlog drained,
 * the figure would say nothing.
 */
import { connect, type Sql } from "../../lib/db/connect.ts";
import { setFault } from "../../lib/faults/mod.ts";
import { createLogger } from "../../lib/log/mod.ts";
import { CONSUMER_FAULTS } from "../../lib/faults/mod.ts";
import { RELAY_FAULTS } from "../../lib/faults/mod.ts";
import { ROUTING } from "../../services/routing.ts";
import type { Ctx } from "../context.ts";
import { OrderSource, pay, place } from "../orders.ts";
import { type Completion, type Probe, startProbe } from "../probe.ts";
import { Progress } from "../progress.ts";
import { atMost, type Figure, figure } from "../report.ts";
import { sleep, summarize } from "../stats.ts";

/** The hardening issue's target, from B's payment to six applied. */
const TARGET_MS = 2_000;

/** As production runs (config.ts defaults, named so that they stay so). */
const SETTINGS = {
  DELIVERY_TIMEOUT_MS: "5000",
  RETRY_DELAYS_MS: "1000,5000,25000",
};

const KITCHEN_SLOW = "kitchenSlow";
/** A slow receiver's answer, twice (duplicates), with room to spare. */
const SLOW_ANSWER_MS = 2 * (5_000 + 1_000) + 5_000;
const FAULTS = [
  KITCHEN_SLOW,
  CONSUMER_FAULTS.duplicateDeliveries,
  RELAY_FAULTS.queueRefusesSends,
];

interface Env {
  ctx: Ctx;
  /** The app's pool, shared by the load and the workers. */
  sql: Sql;
  /** A separate pool for counting. */
  monitor: Sql;
  probe: Probe;
}

/** Builds A's backlog; returns what to record about it. */
type Backlog = (env: Env, a: OrderSource, sandboxA: string) => Promise<
  Record<string, unknown>
>;

interface PhaseResult {
  /** B's orders, ms from the webhook's commit to six applied. */
  latencies: number[];
  /** B's orders not applied at all six within `waitMs` (counted as that). */
  late: number;
  /** A's open deliveries after each of B's orders. */
  backlogA: number[];
  params: Record<string, unknown>;
}

export async function fairness(ctx: Ctx): Promise<Figure[]> {
  const f = ctx.plan.fairness;
  const slow = await phase(ctx, "slow", true, async (env, a, sandboxA) => {
    await setFault(env.sql, sandboxA, KITCHEN_SLOW, true);
    await setFault(
      env.sql,
      sandboxA,
      CONSUMER_FAULTS.duplicateDeliveries,
      true,
    );
    await paidOrders(env, a, f.slowOrders);
    // A's backlog is in the queue once A's OrderPaid messages have their
    // six deliveries each; its kitchen deliveries wait on a slow kitchen.
    await until(
      "A's OrderPaid deliveries in the queue",
      async () =>
        await deliveriesOf(env.monitor, sandboxA, "OrderPaid") >=
          f.slowPaidQueued * ROUTING.OrderPaid.length,
      ctx.plan.drainTimeoutMs,
    );
    return {
      orders: f.slowOrders,
      paidQueuedBeforeB: f.slowPaidQueued,
      faults: [KITCHEN_SLOW, CONSUMER_FAULTS.duplicateDeliveries],
    };
  });
  const plain = await phase(ctx, "plain", false, async (env, a, sandboxA) => {
    const refuses = RELAY_FAULTS.queueRefusesSends;
    await setFault(env.sql, sandboxA, refuses, true);
    await paidOrders(env, a, f.plainOrders);
    await setFault(env.sql, sandboxA, refuses, false);
    // The relay takes A's waiting rows (due at its next retry, or parked by
    // the loop guard) with these two commands' rows, all at once.
    await pay(env.sql, await place(env.sql, a));
    await until(
      "A's rows in the queue",
      async () =>
        await openDeliveries(env.monitor, sandboxA) >= 2 * f.plainOrders,
      ctx.plan.drainTimeoutMs,
    );
    return { orders: f.plainOrders + 1, faults: [`${refuses}, then off`] };
  });
  ctx.params = {
    settings: SETTINGS,
    quietOrders: f.quietOrders,
    waitMs: f.waitMs,
    measured:
      "B's orders one after another, each paid once its OrderPlaced was applied; from recordStripeEvent's commit to the sixth receiver answering 200 for OrderPaid (and its row in all six inboxes); b.orderPlacedP99Ms: from the order's commit to its OrderPlaced applied at its three receivers",
    workers:
      "in this process: relays for orders and billing, 4 consumers, production delivery settings",
    slow: slow.params,
    plain: plain.params,
  };
  return [
    ...figures(ctx, "fairness", slow),
    ...figures(ctx, "fairness_plain", plain),
  ];
}

function figures(ctx: Ctx, name: string, r: PhaseResult): Figure[] {
  const p = summarize(r.latencies);
  const last = r.backlogA.at(-1) ?? 0;
  const drained = r.backlogA.filter((n) => n === 0).length;
  const notes: string[] = [];
  if (r.late > 0) {
    notes.push(
      `${r.late} of B's orders not applied at all six receivers within ${ctx.plan.fairness.waitMs} ms (counted as that)`,
    );
  }
  if (drained > 0) {
    notes.push(
      `A's backlog had drained by ${drained} of B's ${r.backlogA.length} orders: those say nothing about fairness`,
    );
  }
  ctx.notes.push(...notes.map((n) => `${name}: ${n}`));
  ctx.progress.note(
    `${name}: p50 ${p.p50?.toFixed(1)} ms, p99 ${
      p.p99?.toFixed(1)
    } ms over ${p.n} of B's orders; A had ${last} open deliveries at the end`,
  );
  return [
    figure(`${name}_p50`, p.p50, "ms"),
    figure(`${name}_p99`, p.p99, "ms", {
      target: atMost(TARGET_MS, "<= 2 s"),
      note: notes.join("; ") || undefined,
    }),
    figure(`${name}_max`, p.max, "ms"),
    figure(`${name}_backlog_a`, last, "open deliveries", {
      note: "A's deliveries pending or in flight when B's last order was done",
    }),
  ];
}

/**
 * One phase on a fresh database: A's backlog, then B's orders. `slow`: A's
 * receivers answer late, and their answers are waited for (past the
 * consumers' timeout) before the workers stop, so that none comes after
 * the database has gone.
 */
async function phase(
  ctx: Ctx,
  label: string,
  slow: boolean,
  backlog: Backlog,
): Promise<PhaseResult> {
  const db = await ctx.server.database(`fairness_${label}`);
  const sql = connect(db.url, { applicationName: "bench-app" });
  // The faults make the workers log a line per failed batch; counted here,
  // with the first line of each event shown.
  const logged: Record<string, number> = {};
  const log = createLogger("warn", (line) => {
    const { event } = JSON.parse(line) as { event: string };
    if (!logged[event]) ctx.progress.note(`${label}, first ${event}: ${line}`);
    logged[event] = (logged[event] ?? 0) + 1;
  });
  try {
    const probe = await startProbe({
      url: db.url,
      sql,
      settings: SETTINGS,
      log,
    });
    const env: Env = { ctx, sql, monitor: db.sql, probe };
    try {
      const a = new OrderSource(sql, `fairness-${label}-a`);
      const sandboxA = await a.sandbox();
      ctx.progress.step(`fairness: ${label}: A's backlog`);
      const t0 = performance.now();
      const built = await backlog(env, a, sandboxA);
      built.builtMs = Math.round(performance.now() - t0);
      const atStart = await openDeliveries(db.sql, sandboxA);
      const r = await quietOrders(env, label, sandboxA);
      // A's retries are quick from now on; the slow answers under way end.
      for (const name of FAULTS) await setFault(sql, sandboxA, name, false);
      if (slow) {
        ctx.progress.step(`fairness: ${label}: A's slow answers under way`);
        const ended = await reached(
          () => Promise.resolve(probe.running() === 0),
          SLOW_ANSWER_MS,
        );
        if (!ended) {
          ctx.notes.push(
            `${label}: ${probe.running()} answers of A's receivers still under way after ${SLOW_ANSWER_MS} ms when the workers stopped`,
          );
        }
      }
      r.params = {
        a: { ...built, openDeliveriesAtStart: atStart },
        ...r.params,
        // Filled on until the workers have stopped.
        logged,
      };
      return r;
    } finally {
      await probe.stop();
    }
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
}

/** B's orders one after another, each timed. */
async function quietOrders(
  env: Env,
  label: string,
  sandboxA: string,
): Promise<PhaseResult> {
  const { ctx, probe } = env;
  const f = ctx.plan.fairness;
  ctx.progress.step(`fairness: ${label}: B's ${f.quietOrders} paid orders`);
  const b = new OrderSource(env.sql, `fairness-${label}-b`);
  const latencies: number[] = [];
  const placed: number[] = [];
  const backlogA: number[] = [];
  const messageIds: string[] = [];
  let late = 0;
  for (let i = 0; i < f.quietOrders; i++) {
    const order = await place(env.sql, b);
    const t0 = performance.now();
    // Not waited for past `waitMs`: its OrderPaid is then timed all the same.
    await reached(
      async () => await openWork(env.monitor, order.sandboxId) === 0,
      f.waitMs,
    );
    placed.push(performance.now() - t0);
    const paid = new Promise<Completion>((resolve) =>
      probe.watch("OrderPaid", order.orderId, resolve)
    );
    await pay(env.sql, order);
    const t = performance.now();
    const c = await within(paid, f.waitMs);
    probe.unwatch("OrderPaid", order.orderId);
    if (c) {
      latencies.push(Math.max(0, c.doneAt - t));
      messageIds.push(c.messageId);
    } else {
      late++;
      latencies.push(f.waitMs);
    }
    backlogA.push(await openDeliveries(env.monitor, sandboxA));
    ctx.progress.update(
      `${Progress.count(i + 1, f.quietOrders)}, last ${
        latencies.at(-1)!.toFixed(0)
      } ms; A has ${backlogA.at(-1)} open deliveries`,
    );
  }
  const inInboxes = await inAllInboxes(env.monitor, messageIds);
  if (inInboxes < messageIds.length) {
    throw new Error(
      `${label}: ${
        messageIds.length - inInboxes
      } of B's OrderPaid answered 200 at six receivers but are missing from an inbox`,
    );
  }
  return {
    latencies,
    late,
    backlogA,
    params: {
      b: {
        orders: f.quietOrders,
        inAllSixInboxes: inInboxes,
        orderPlacedP99Ms: Math.round(summarize(placed).p99 ?? 0),
        latenciesMs: latencies.map((ms) => Math.round(ms)),
      },
      aOpenDeliveriesAfterEach: backlogA,
    },
  };
}

/** Places and pays `n` orders of `source`, eight at a time. */
async function paidOrders(env: Env, source: OrderSource, n: number) {
  let started = 0;
  let done = 0;
  const client = async () => {
    while (started < n) {
      started++;
      await pay(env.sql, await place(env.sql, source));
      env.ctx.progress.update(Progress.count(++done, n));
    }
  };
  await Promise.all(Array.from({ length: Math.min(8, n) }, client));
}

/** Open deliveries (pending or in flight) of a sandbox. */
async function openDeliveries(sql: Sql, sandboxId: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from queue.deliveries
     where tenant_id = ${sandboxId} and state in ('pending', 'in_flight')`;
  return row.n;
}

/** Deliveries of `type` a sandbox has, in any state. */
async function deliveriesOf(sql: Sql, sandboxId: string, type: string) {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from queue.deliveries
     where tenant_id = ${sandboxId} and type = ${type}`;
  return row.n;
}

/** A sandbox's outbox rows not yet published and its open deliveries. */
async function openWork(sql: Sql, sandboxId: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select (select count(*) from orders.outbox
             where tenant_id = ${sandboxId})
         + (select count(*) from billing.outbox
             where tenant_id = ${sandboxId})
         + (select count(*) from queue.deliveries
             where tenant_id = ${sandboxId}
               and state in ('pending', 'in_flight')) as n`;
  return Number(row.n);
}

/** How many of `messageIds` all six receivers' inboxes hold as applied. */
async function inAllInboxes(sql: Sql, messageIds: string[]): Promise<number> {
  if (messageIds.length === 0) return 0;
  const seen = new Map<string, number>();
  for (const receiver of ROUTING.OrderPaid) {
    const rows = await sql<{ id: string }[]>`
      select message_id::text as id from ${sql(`${receiver}.inbox`)}
       where message_id = any(${messageIds}::uuid[]) and status = 200`;
    for (const { id } of rows) seen.set(id, (seen.get(id) ?? 0) + 1);
  }
  return [...seen.values()].filter((n) => n === ROUTING.OrderPaid.length)
    .length;
}

/** Waits until `check` holds, up to `ms`; false if it did not. */
async function reached(check: () => Promise<boolean>, ms: number) {
  const deadline = performance.now() + ms;
  while (!await check()) {
    if (performance.now() > deadline) return false;
    await sleep(10);
  }
  return true;
}

/** Waits until `check` holds, up to `ms`; throws naming `what` after. */
async function until(what: string, check: () => Promise<boolean>, ms: number) {
  if (!await reached(check, ms)) {
    throw new Error(`${what}: not within ${ms} ms`);
  }
}

/** `p`'s value, or null when it takes longer than `ms`. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<null>((resolve) => timer = setTimeout(resolve, ms, null)),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
