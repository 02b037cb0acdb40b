/**
 * memory: peak resident memory (the larger of sampled VmRSS and the kernel's
 * VmHWM, from /proc) of
 *
 * - a worker process during `relay` and during `deliver` (measured there,
 *   reported here);
 * - the whole app (bench/app_worker.ts: bakery.ts `startBakery`, the web
 *   app, test-mode payments, relay and consumers in one process) while
 *   paid orders come in over HTTP at half the sustainable rate found by
 *   `steady`: POST /api/orders, then POST /api/orders/:id/pay with the test
 *   card, whose signed webhook the app posts to itself.
 */
import type { Ctx } from "../context.ts";
import { BenchChild, taskV8Flags } from "../child.ts";
import { openLoop } from "../load.ts";
import { orderInput, type Slot, slots } from "../orders.ts";
import { atMost, type Figure, figure } from "../report.ts";

/** A visitor: a cookie jar (the guest session) and this site's Origin. */
class Visitor {
  #cookie = "";
  #slots: Generator<Slot> = slots();
  #n = 0;

  constructor(readonly base: string, readonly label: string) {}

  async post(path: string, body: unknown): Promise<Record<string, unknown>> {
    const response = await fetch(new URL(path, this.base), {
      method: "POST",
      headers: {
        "content-type": "application/json",
        origin: new URL(this.base).origin,
        ...(this.#cookie ? { cookie: this.#cookie } : {}),
      },
      body: JSON.stringify(body),
    });
    const set = response.headers.getSetCookie()[0];
    if (set) this.#cookie = set.split(";")[0];
    const json = await response.json();
    if (response.status >= 300) {
      throw new Error(
        `POST ${path} answered ${response.status}: ${JSON.stringify(json)}`,
      );
    }
    return json;
  }

  async paidOrder() {
    const slot = this.#slots.next();
    // 12,960 orders fit one sandbox's 60 days; a visitor never gets there.
    if (slot.done) throw new Error(`visitor ${this.label} used up its days`);
    const key = `bench-app-${this.label}-${++this.#n}`;
    const placed = await this.post("/api/orders", orderInput(slot.value, key));
    await this.post(`/api/orders/${placed.orderId}/pay`, {
      card: "4242424242424242",
    });
  }
}

export async function memory(ctx: Ctx): Promise<Figure[]> {
  const { plan, progress } = ctx;
  const rate = (ctx.shared.sustainableRate ?? 40) / 2;
  const db = await ctx.server.database("memory");
  let app: BenchChild | undefined;
  const dataDir = await Deno.makeTempDir({ prefix: "bakery-bench-app-" });
  let peakMb = 0;
  let paid = 0;
  try {
    progress.step(
      `memory: the whole app under ${rate.toFixed(1)} paid orders/s over HTTP`,
    );
    app = new BenchChild(
      "bench/app_worker.ts",
      [],
      { BENCH_WORKER_DATABASE_URL: db.url, BENCH_APP_DATA_DIR: dataDir },
      taskV8Flags("start"),
    );
    const { url } = await app.expect("ready") as { url: string };
    const cpuBefore = app.cpuSeconds();
    const visitors = Array.from(
      { length: 8 },
      (_, i) => new Visitor(url, String(i)),
    );
    const r = await openLoop({
      rate,
      durationMs: plan.memoryAppMs,
      maxInFlight: 500,
      op: (i) => visitors[i % visitors.length].paidOrder(),
      onTick: (ms) => {
        progress.update(
          `${(ms / 1000).toFixed(0)} s, ${
            Math.round(app!.memory.peakRssMb)
          } MB resident`,
        );
      },
    });
    if (r.failed > 0) {
      ctx.notes.push(`${r.failed} paid orders failed: ${r.firstError}`);
    }
    const [row] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from orders.orders where state = 'paid'`;
    paid = row.n;
    const stopped = await app.stop();
    ctx.addWorkerCpu(Math.max(0, stopped.cpuSeconds - cpuBefore));
    peakMb = stopped.peakMb;
    progress.note(
      `app peak ${
        Math.round(peakMb)
      } MB; ${r.finished} paid orders sent, ${paid} paid in the database`,
    );
  } finally {
    app?.kill();
    await app?.closed();
    await db.drop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
  ctx.params = {
    appRate: rate,
    appMs: plan.memoryAppMs,
    appOrdersPaid: paid,
    sampling: "/proc/<pid>/status VmRSS every 250 ms and VmHWM at the end",
  };
  const worker = atMost(150, "<= 150 MB");
  return [
    figure("worker_relay_peak", ctx.shared.workerPeakMb.relay ?? null, "MB", {
      target: worker,
    }),
    figure(
      "worker_deliver_peak",
      ctx.shared.workerPeakMb.deliver ?? null,
      "MB",
      { target: worker },
    ),
    figure("app_steady_peak", peakMb, "MB", {
      target: atMost(250, "<= 250 MB"),
    }),
  ];
}
