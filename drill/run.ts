/**
 * The drill's run, once everything is started: the shoppers' load and the
 * schedule of faults side by side for the duration, a progress line and a
 * backlog sample every second, then the settling: every switch off, and
 * waiting (bounded) until nothing is owed or open. Dead letters left then
 * get one operator's sweep (a redrive of each sandbox's dead letters, as
 * the console offers), and the wait starts again.
 */
import {
  type FaultEvent,
  redriveAll,
  type Rig,
  runFault,
  setSwitches,
} from "./faults.ts";
import type { PlannedFault } from "./schedule.ts";
import { type LoadRecord, runShoppers, sleep } from "./shoppers.ts";
import { type Backlog, readBacklog, type Stores } from "./stores.ts";

export interface Sample {
  atMs: number;
  backlog: Backlog | null;
}

export interface RunOutcome {
  startMs: number;
  loadSeconds: number;
  settleSeconds: number;
  record: LoadRecord;
  events: FaultEvent[];
  samples: Sample[];
  settled: boolean;
  swept: number;
}

/** The switches a drill may leave on; all go off before settling. */
const SWITCHES = [
  "lostAcks",
  "duplicateDeliveries",
  "kitchenRefuses",
  "scheduleRefuses",
  "dispatchRefuses",
  "crmRefuses",
  "customersRefuses",
  "receiptsRefuses",
];

/** The backlog, or null while the databases do not answer (1 s at most). */
async function sample(stores: Stores): Promise<Backlog | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<null>((r) =>
    timer = setTimeout(() => r(null), 1000)
  );
  try {
    return await Promise.race([readBacklog(stores).catch(() => null), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Accepted orders not paid yet (all of them while the database is away). */
async function unpaid(stores: Stores, record: LoadRecord): Promise<number> {
  const ids = record.accepted.map((a) => a.orderId);
  try {
    const sql = stores.at("orders");
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from unnest(${ids}::uuid[]) ids(id)
        left join orders.orders o on o.id = ids.id
       where o.state is distinct from 'paid'`;
    return row.n;
  } catch {
    return ids.length;
  }
}

/** One line, rewritten in place on a terminal, every 5 s otherwise. */
class ProgressLine {
  #tty = Deno.stderr.isTerminal();
  #last = 0;
  show(text: string) {
    if (this.#tty) {
      Deno.stderr.writeSync(new TextEncoder().encode(`\r\x1b[2K${text}`));
    } else if (Date.now() - this.#last >= 5000) {
      console.error(text);
      this.#last = Date.now();
    }
  }
  end() {
    if (this.#tty) Deno.stderr.writeSync(new TextEncoder().encode("\n"));
  }
}

export async function runDrill(options: {
  rig: Rig;
  stores: Stores;
  plan: PlannedFault[];
  durationS: number;
  rate: number;
  settleS: number;
}): Promise<RunOutcome> {
  const { rig, stores, plan } = options;
  const record: LoadRecord = {
    placed: 0,
    accepted: [],
    unanswered: 0,
    failures: {},
  };
  const events: FaultEvent[] = [];
  const samples: Sample[] = [];
  const progress = new ProgressLine();
  const stopLoad = new AbortController();
  const startMs = Date.now();
  const since = () => Date.now() - startMs;
  let current = "";
  const seen: { last: Backlog | null } = { last: null };

  const monitor = new AbortController();
  const watching = (async () => {
    while (!monitor.signal.aborted) {
      const last = seen.last = await sample(stores);
      samples.push({ atMs: Date.now(), backlog: last });
      const open = last
        ? `backlog ${
          last.outbox + last.pending + last.inFlight
        }, dead ${last.dead}`
        : "databases not answering";
      progress.show(
        `${
          (since() / 1000).toFixed(0).padStart(4)
        } s  orders ${record.placed}, paid ${record.accepted.length}  faults ${events.length}/${plan.length}${
          current ? ` (${current})` : ""
        }  ${open}`,
      );
      await sleep(1000, monitor.signal);
    }
  })();

  const load = runShoppers(rig.shoppers, options.rate, record, stopLoad.signal);
  const faults = (async () => {
    for (const fault of plan) {
      await sleep(Math.max(0, fault.atS * 1000 - since()));
      current = fault.kind;
      const event: FaultEvent = {
        kind: fault.kind,
        target: fault.target,
        startMs: since(),
        endMs: 0,
        detail: "",
      };
      try {
        event.detail = await runFault(rig, fault, new AbortController().signal);
      } catch (error) {
        event.error = (error as Error).message;
      }
      event.endMs = since();
      events.push(event);
      current = "";
    }
  })();
  await sleep(options.durationS * 1000);
  stopLoad.abort();
  await load;
  await faults;
  const loadSeconds = since() / 1000;

  // Settling: every switch off, then wait for nothing owed or open.
  current = "settling";
  await setSwitches(
    rig.shoppers,
    Object.fromEntries(SWITCHES.map((s) => [s, false])),
  );
  const settleStart = Date.now();
  const deadline = settleStart + options.settleS * 1000;
  let settled = false;
  let swept = 0;
  let sweeps = 0;
  let quiet = 0;
  while (Date.now() < deadline) {
    await sleep(1000);
    const now = seen.last;
    if (!now) continue;
    const open = now.outbox + now.pending + now.inFlight;
    quiet = open === 0 ? quiet + 1 : 0;
    // Two quiet samples in a row: nothing moved for a second.
    if (quiet < 2) continue;
    if (now.dead > 0 && sweeps < 2) {
      sweeps++;
      current = "operator sweep";
      swept += await redriveAll(rig.shoppers);
      quiet = 0;
      continue;
    }
    // Accepted payments whose webhook is still on its way are not lost yet.
    if (await unpaid(stores, record) > 0) continue;
    settled = true;
    break;
  }
  monitor.abort();
  await watching;
  progress.end();
  return {
    startMs,
    loadSeconds,
    settleSeconds: (Date.now() - settleStart) / 1000,
    record,
    events,
    samples,
    settled,
    swept,
  };
}
