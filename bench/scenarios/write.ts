/**
 * write: orders placed through the orders service (services/orders/place.ts
 * `placeOrder`: the order, its line, the event, the outbox row, the
 * idempotency key and the wake-up, in one transaction) by 4 and 8 concurrent
 * clients, each in its own sandbox as visitors are. A LISTEN connection is
 * open on the outbox channel, as the app's relay has one; no relay runs, so
 * the figure is the write path alone; pending rows are swept as a relay
 * that keeps up would. The wake-up is the app's (bakery.ts): an after-commit
 * waker that coalesces NOTIFYs. A third run at 8 clients with a NOTIFY
 * inside every order transaction (the same placeOrder on a pool without
 * the waker, where the outbox sends its NOTIFY in the transaction) shows
 * what that choice is worth, and a fourth, the same order transaction
 * without the outbox row and the wake-up (bench/order_variants.ts
 * placeWithoutOutbox), what the outbox itself costs; a fifth, an order of a
 * leaner schema (bench/lean_order.ts: three writes instead of eight), what
 * that schema change would be worth; a sixth, the order row alone in the
 * same one round trip through the orders service (bench/orders.ts
 * placeOrderRowOnly), the floor of any order that keeps the sandboxes
 * apart; a seventh, the order with its envelope in a table that has a
 * primary key and nothing else (bench/order_variants.ts placeWithBareRow),
 * the most the outbox's own cost could come down to; an eighth, the order
 * with its row in orders.outbox but without the wake-up
 * (placeWithOutboxRowAlone), what the wake-up costs beside the row. The order
 * and the three runs its cost is read against are measured interleaved
 * (see `interleaved`). The targets (issue 19): orders_8 >= 1.5 x the
 * peer's order with graphile-worker's add_job (peer.order_add_job_8), and
 * >= 0.85 x orders_8_without_outbox; and (issue 55) orders_8 >= 1.5 x the
 * second peer's order with pg-boss's send (peer_pgboss.order_send_8).
 */
import { connect, type Sql } from "../../lib/db/connect.ts";
import {
  coalescingWaker,
  OUTBOX_CHANNEL,
  setOutboxWaker,
} from "../../lib/outbox/mod.ts";
import { baseline, type Ctx } from "../context.ts";
import { createLeanOrders, placeLeanOrder } from "../lean_order.ts";
import { closedLoop } from "../load.ts";
import { OrderSource, place, placeOrderRowOnly } from "../orders.ts";
import {
  createBareOutbox,
  placeWithBareRow,
  placeWithOutboxRowAlone,
  placeWithoutOutbox,
} from "../order_variants.ts";
import { type Figure, figure, ratioAtLeast } from "../report.ts";
import { sleep } from "../stats.ts";

/**
 * Deletes orders.outbox rows every 100 ms, as a relay that keeps up would
 * once it published them, without its CPU. Without it the outbox would
 * only grow, which no running bakery's does.
 */
function sweeper(sql: Sql) {
  let running = true;
  const done = (async () => {
    while (running) {
      await sql`delete from orders.outbox`;
      await sleep(100);
    }
  })();
  return async () => {
    running = false;
    await done;
  };
}

/** The runs at 8 clients measured interleaved (see `interleaved`). */
const INTERLEAVED = ["waker", "noOutbox", "bareRow", "rowAlone"] as const;
/** Slices each interleaved run is measured in. */
const INTERLEAVE_SLICES = 5;
/** The unmeasured start of every slice: the clients' first orders. */
const SLICE_WARMUP_MS = 250;

export async function write(ctx: Ctx): Promise<Figure[]> {
  const { plan, progress } = ctx;
  let notifications = 0;
  /** CPU µs per order by run: the bench process and PostgreSQL. */
  const cpuUsPerOp: Record<string, Record<string, number>> = {};
  /**
   * The runs: the order as the app places it (`waker`, the target's), and
   * at 8 clients the references read against it. Each with its database
   * label, its words, its figure's suffix, the note of its figure, and one
   * order.
   */
  type Place = (sql: Sql, source: OrderSource) => Promise<unknown>;
  const MODES: Record<
    string,
    {
      label: string;
      what: string;
      figure: string;
      note?: string;
      op: Place;
      /** The pool has no after-commit waker: the NOTIFY goes in the order. */
      noWaker?: boolean;
      /** Tables of the benchmark's own that the run writes into. */
      setup?: (sql: Sql) => Promise<void>;
    }
  > = {
    waker: {
      label: "",
      what: "",
      figure: "",
      op: (sql, source) => place(sql, source),
    },
    inTx: {
      label: "n",
      what: " (NOTIFY in the transaction)",
      figure: "_notify_in_transaction",
      note:
        "placeOrder on a pool without the after-commit waker: the outbox's NOTIFY inside every order transaction, for comparison",
      op: (sql, source) => place(sql, source),
      noWaker: true,
    },
    noOutbox: {
      label: "x",
      what: " (no outbox row, no wake-up)",
      figure: "_without_outbox",
      note:
        "the same order transaction without the outbox row and the wake-up (what the outbox costs; not the target)",
      op: placeWithoutOutbox,
    },
    rowAlone: {
      label: "o",
      what: " (the outbox row alone: no wake-up)",
      figure: "_outbox_row_alone",
      note:
        "the same order transaction with its envelope as a row of orders.outbox itself (its indexes, checks and policy), without the wake-up: what the wake-up costs beside the row",
      op: placeWithOutboxRowAlone,
    },
    lean: {
      label: "l",
      what: " (a lean order: three writes)",
      figure: "_lean_schema",
      note:
        "a leaner order schema, measured without adopting it: three writes (the order row carrying its lines and idempotency key, the capacity, the outbox row standing for the event) with the same isolation, outbox row and wake-up",
      op: placeLeanOrder,
      setup: createLeanOrders,
    },
    bareRow: {
      label: "b",
      what: " (a bare outbox row)",
      figure: "_bare_row",
      note:
        "the same order transaction with its envelope as one row of a table that has a primary key and nothing else (bench.bare_outbox: no other index, no state, no wake-up): the floor of any outbox that writes its message in the order's transaction",
      op: placeWithBareRow,
      setup: createBareOutbox,
    },
    rowOnly: {
      label: "r",
      what: " (the order row alone)",
      figure: "_row_only",
      note:
        "the floor: the order row alone, sent as an order is (one round trip, the orders role, the sandbox and its row-level security), without key, capacity, line, event, outbox row or wake-up; any order that keeps the sandboxes apart costs at least this",
      op: placeOrderRowOnly,
    },
  };
  /**
   * Opens one run: a fresh database (every run starts from the same
   * tables), its pool with the app's waker or none, the listener and the
   * sweeper. `measure` runs the closed loop on it and may be called again;
   * `close` ends it.
   */
  const open = async (clients: number, mode: keyof typeof MODES) => {
    const label = `${clients}${MODES[mode].label}`;
    const db = await ctx.server.database(`write${label}`);
    const listener = connect(db.url, {
      max: 1,
      applicationName: "bench-listen",
    });
    const sql = connect(db.url, { max: clients, applicationName: "bench" });
    // As bakery.ts: an after-commit waker on the pool (no relay runs in this
    // process, so only its coalesced NOTIFY goes out).
    const waker = coalescingWaker(sql);
    if (!MODES[mode].noWaker) setOutboxWaker(sql, waker.wake);
    await MODES[mode].setup?.(db.sql);
    const stopSweeper = sweeper(db.sql);
    await listener.listen(OUTBOX_CHANNEL, () => notifications++);
    const sources = Array.from(
      { length: clients },
      (_, i) => new OrderSource(sql, `w${label}-${i}`),
    );
    return {
      measure: (warmupMs: number, durationMs: number) =>
        closedLoop({
          clients,
          warmupMs,
          durationMs,
          op: async (c) => {
            await MODES[mode].op(sql, sources[c]);
          },
          progress,
          cpu: ctx.cpuNow,
        }),
      close: async () => {
        await stopSweeper();
        await waker.flush();
        await sql.end({ timeout: 5 });
        await listener.end({ timeout: 5 });
        await db.drop();
      },
    };
  };
  const said = (clients: number, mode: string, rate: number) =>
    progress.note(
      `${clients} clients${MODES[mode].what}: ${Math.round(rate)} orders/s`,
    );
  /** One run on its own: warm-up, then `writeMs` measured. */
  const run = async (clients: number, mode: keyof typeof MODES) => {
    progress.step(`write: placeOrder, ${clients} clients${MODES[mode].what}`);
    const opened = await open(clients, mode);
    try {
      const r = await opened.measure(plan.warmupMs, plan.writeMs);
      if (r.cpuUsPerOp) {
        cpuUsPerOp[`orders_${clients}${MODES[mode].figure}`] = r.cpuUsPerOp;
      }
      said(clients, mode, r.rate);
      return r.rate;
    } finally {
      await opened.close();
    }
  };
  /**
   * Runs read against each other, interleaved: all open at once, then
   * `INTERLEAVE_SLICES` rounds in which each runs a slice of `writeMs`
   * (the order of the runs turning from round to round). Each gets the same
   * measured time as a run on its own, spread over the whole scenario, so a
   * machine whose pace drifts (fsync times do, by a third over minutes)
   * moves every run of the ratio alike instead of the one that came later.
   */
  const interleaved = async (
    clients: number,
    modes: (keyof typeof MODES)[],
  ): Promise<Record<string, number>> => {
    progress.step(
      `write: ${modes.length} runs at ${clients} clients, interleaved in ${INTERLEAVE_SLICES} slices each`,
    );
    const opened: Awaited<ReturnType<typeof open>>[] = [];
    const ops = modes.map(() => 0);
    const seconds = modes.map(() => 0);
    const cpu = modes.map(() => ({} as Record<string, number>));
    try {
      for (const mode of modes) opened.push(await open(clients, mode));
      // Each warmed up once in full; each slice after that briefly.
      for (const o of opened) await o.measure(plan.warmupMs, 0);
      const slice = plan.writeMs / INTERLEAVE_SLICES;
      for (let round = 0; round < INTERLEAVE_SLICES; round++) {
        for (let k = 0; k < modes.length; k++) {
          const i = (k + round) % modes.length;
          const r = await opened[i].measure(SLICE_WARMUP_MS, slice);
          ops[i] += r.ops;
          seconds[i] += r.seconds;
          for (const [proc, us] of Object.entries(r.cpuUsPerOp ?? {})) {
            cpu[i][proc] = (cpu[i][proc] ?? 0) + us * r.ops;
          }
        }
      }
    } finally {
      for (const o of opened) await o.close();
    }
    const rates: Record<string, number> = {};
    modes.forEach((mode, i) => {
      rates[mode] = ops[i] / seconds[i];
      if (ops[i] > 0) {
        cpuUsPerOp[`orders_${clients}${MODES[mode].figure}`] = Object
          .fromEntries(
            Object.entries(cpu[i]).map((
              [proc, total],
            ) => [proc, Math.round(total / ops[i])]),
          );
      }
      said(clients, mode, rates[mode]);
    });
    return rates;
  };
  const figures: Figure[] = [];
  const w4 = await run(4, "waker");
  figures.push(figure("orders_4", w4, "orders/s", {
    baseline: baseline(ctx, "outbox_plain_4", "tx/s"),
  }));
  // The order and the three runs its outbox's cost is read against, side
  // by side in time; the other references one after the other.
  const rates = await interleaved(8, [...INTERLEAVED]);
  const w8 = rates.waker;
  figures.push(figure("orders_8", w8, "orders/s", {
    baseline: baseline(ctx, "peer.order_add_job_8", "orders/s"),
    target: ratioAtLeast(1.5, ">= 1.5 x peer.order_add_job_8"),
  }));
  // The same against the second peer (issue 55).
  figures.push(figure("orders_8_vs_pgboss", w8, "orders/s", {
    baseline: baseline(ctx, "peer_pgboss.order_send_8", "orders/s"),
    target: ratioAtLeast(1.5, ">= 1.5 x peer_pgboss.order_send_8"),
    note: "orders_8 again, read against the order with pg-boss send",
  }));
  for (const mode of ["inTx", "lean", "rowOnly"]) {
    rates[mode] = await run(8, mode);
  }
  for (
    const mode of ["inTx", "noOutbox", "bareRow", "rowAlone", "lean", "rowOnly"]
  ) {
    figures.push(
      figure(`orders_8${MODES[mode].figure}`, rates[mode], "orders/s", {
        baseline: baseline(ctx, "outbox_plain_8", "tx/s"),
        note: MODES[mode].note,
      }),
    );
  }
  // The outbox's own cost: the same figure against the same order without
  // its outbox row and wake-up, measured interleaved with it.
  figures.push(figure("orders_8_outbox_cost", w8, "orders/s", {
    baseline: {
      name: "write/orders_8_without_outbox",
      value: rates.noOutbox,
      unit: "orders/s",
    },
    target: ratioAtLeast(0.85, ">= 0.85 x orders_8_without_outbox"),
    note:
      "orders_8 again, read against the same order without its outbox row and wake-up",
  }));
  // The outbox against the floor of any outbox: the same order with a bare
  // row (a primary key, nothing else), measured interleaved with it.
  figures.push(figure("orders_8_vs_bare_row", w8, "orders/s", {
    baseline: {
      name: "write/orders_8_bare_row",
      value: rates.bareRow,
      unit: "orders/s",
    },
    target: ratioAtLeast(0.95, ">= 0.95 x orders_8_bare_row"),
    note:
      "orders_8 again, read against the same order writing its message as a bare row",
  }));
  // The target's ceiling in this run: the bare row against the same order
  // without it. Under 0.85, no outbox that writes its message in the
  // order's transaction meets the target on this machine.
  figures.push(figure("orders_8_bare_row_cost", rates.bareRow, "orders/s", {
    baseline: {
      name: "write/orders_8_without_outbox",
      value: rates.noOutbox,
      unit: "orders/s",
    },
    note:
      "orders_8_bare_row read against the same order without its outbox: the outbox cost's ceiling, what the target's ratio could be at best",
  }));
  // The same for the outbox row alone: the row with its indexes, without
  // the wake-up.
  figures.push(
    figure("orders_8_outbox_row_alone_cost", rates.rowAlone, "orders/s", {
      baseline: {
        name: "write/orders_8_without_outbox",
        value: rates.noOutbox,
        unit: "orders/s",
      },
      note:
        "orders_8_outbox_row_alone read against the same order without its outbox: the row in orders.outbox with its indexes, without the wake-up",
    }),
  );
  figures.push(figure("orders_8_vs_outbox_plain", w8, "orders/s", {
    baseline: baseline(ctx, "outbox_plain_8", "tx/s"),
    note:
      "the target of the first round (>= 0.9), retired in issue 19: eight isolated writes against two plain statements",
  }));
  ctx.params = {
    durationMs: plan.writeMs,
    warmupMs: plan.warmupMs,
    order: "one item, qty 1, delivery; one sandbox per client",
    database: "a fresh database per run",
    interleaved: `${
      INTERLEAVED.map((m) => `orders_8${MODES[m].figure}`).join(", ")
    } open at once, each warmed up for ${plan.warmupMs} ms, then measured in ${INTERLEAVE_SLICES} slices of ${
      plan.writeMs / INTERLEAVE_SLICES
    } ms (each after ${SLICE_WARMUP_MS} ms unmeasured), their order turning each round; orders_4 and the other references one after the other`,
    wake:
      "as bakery.ts: coalescingWaker on the pool (after commit: a quiet service's first NOTIFY at once, then one per 10 ms window)",
    listener: `one LISTEN ${OUTBOX_CHANNEL} connection, no relay running`,
    sweeper:
      "pending outbox rows marked published every 100 ms, as a relay that keeps up would",
    withoutOutbox:
      "orders_8_without_outbox: bench/order_variants.ts placeWithoutOutbox, the order statement of services/orders/orders_sql.ts without the outbox row and the wake-up",
    leanSchema:
      "orders_8_lean_schema: bench/lean_order.ts placeLeanOrder, into bench.lean_orders (row-level security, the orders role), orders.day_counts and orders.outbox in one statement, one round trip",
    bareRow:
      "orders_8_bare_row: bench/order_variants.ts placeWithBareRow, the order statement with the envelope inserted into bench.bare_outbox (primary key only, the sandbox policy, the orders role)",
    outboxRowAlone:
      "orders_8_outbox_row_alone: bench/order_variants.ts placeWithOutboxRowAlone, the order statement with the envelope inserted into orders.outbox, without the wake-up",
    rowOnly:
      "orders_8_row_only: bench/orders.ts placeOrderRowOnly, one INSERT of the order row through serviceStatement (BEGIN, role and sandbox, the INSERT, COMMIT in one round trip)",
    notificationsReceived: notifications,
    cpuUsPerOp,
  };
  return figures;
}
