/**
 * write: orders placed through the orders service (services/orders/place.ts
 * `placeOrder`: the order, its line, the event, the outbox row, the
 * idempotency key and the wake-up, in one transaction) by 4 and 8 concurrent
 * clients, each in its own sandbox as visitors are. A LISTEN connection is
 * open on the outbox channel, as the app's relay has one; no relay runs, so
 * the figure is the write path alone; pending rows are swept as a relay
 * that keeps up would. A third run at 8 clients without the NOTIFY shows
 * what the wake-up costs.
 */
import { connect, type Sql } from "../../lib/db/connect.ts";
import { OUTBOX_CHANNEL } from "../../lib/outbox/mod.ts";
import { baseline, type Ctx } from "../context.ts";
import { closedLoop } from "../load.ts";
import { OrderSource, place } from "../orders.ts";
import { type Figure, figure, ratioAtLeast } from "../report.ts";
import { sleep } from "../stats.ts";

/**
 * Marks pending orders.outbox rows published every 100 ms: a stand-in for
 * a relay that keeps up, without its CPU. Without it every order's outbox
 * "flush" (lib/outbox/append.ts) scans a pending set that only grows.
 */
function sweeper(sql: Sql) {
  let running = true;
  const done = (async () => {
    while (running) {
      await sql`update orders.outbox set state = 'published', published_at = now()
                 where state = 'pending'`;
      await sleep(100);
    }
  })();
  return async () => {
    running = false;
    await done;
  };
}

export async function write(ctx: Ctx): Promise<Figure[]> {
  const { plan, progress } = ctx;
  let notifications = 0;
  const run = async (clients: number, notify: boolean) => {
    progress.step(
      `write: placeOrder, ${clients} clients${notify ? "" : ", no NOTIFY"}`,
    );
    // A fresh database per run: every run starts from the same tables.
    const db = await ctx.server.database(`write${clients}${notify ? "" : "q"}`);
    const listener = connect(db.url, {
      max: 1,
      applicationName: "bench-listen",
    });
    const sql = connect(db.url, { max: clients, applicationName: "bench" });
    const stopSweeper = sweeper(db.sql);
    try {
      await listener.listen(OUTBOX_CHANNEL, () => notifications++);
      const sources = Array.from(
        { length: clients },
        (_, i) => new OrderSource(sql, `w${clients}${notify ? "" : "q"}-${i}`),
      );
      const r = await closedLoop({
        clients,
        warmupMs: plan.warmupMs,
        durationMs: plan.writeMs,
        op: async (c) => {
          await place(sql, sources[c], { notify });
        },
        progress,
      });
      progress.note(
        `${clients} clients${notify ? "" : " (no NOTIFY)"}: ${
          Math.round(r.rate)
        } orders/s`,
      );
      return r.rate;
    } finally {
      await stopSweeper();
      await sql.end({ timeout: 5 });
      await listener.end({ timeout: 5 });
      await db.drop();
    }
  };
  const figures: Figure[] = [];
  const w4 = await run(4, true);
  figures.push(figure("orders_4", w4, "orders/s", {
    baseline: baseline(ctx, "outbox_plain_4", "tx/s"),
  }));
  const w8 = await run(8, true);
  figures.push(figure("orders_8", w8, "orders/s", {
    baseline: baseline(ctx, "outbox_plain_8", "tx/s"),
    target: ratioAtLeast(0.9, ">= 0.9 x outbox_plain_8"),
  }));
  const quiet = await run(8, false);
  figures.push(figure("orders_8_without_notify", quiet, "orders/s", {
    baseline: baseline(ctx, "outbox_plain_8", "tx/s"),
    note:
      "placeOrder(..., { notify: false }): what the in-transaction NOTIFY costs",
  }));
  ctx.params = {
    durationMs: plan.writeMs,
    warmupMs: plan.warmupMs,
    order: "one item, qty 1, delivery; one sandbox per client",
    database: "a fresh database per run",
    listener: `one LISTEN ${OUTBOX_CHANNEL} connection, no relay running`,
    sweeper:
      "pending outbox rows marked published every 100 ms, as a relay that keeps up would (see lib/outbox/append.ts flush)",
    notificationsReceived: notifications,
  };
  return figures;
}
