/**
 * The drill's command line: what to start, how long to run, which faults.
 * Everything has a default, so that `deno task drill` alone runs the whole
 * drill on PostgreSQL in about two minutes.
 */
import { FAULT_KINDS, type FaultKind } from "./schedule.ts";

export interface DrillOptions {
  seed: number;
  durationS: number;
  /** The kinds the schedule may draw from (those the setup allows). */
  faults: FaultKind[];
  transport: "postgres" | "jetstream";
  cluster: boolean;
  workers: number;
  split: boolean;
  /** Paid orders a second, all shoppers together. */
  rate: number;
  shoppers: number;
  /** Where drill.json and drill.html go. */
  out: string;
  /**
   * Test only: every sandbox's CRM receiver skips its inbox check for the
   * whole run (the `crmSkipsInbox` fault switch), so that the checker must
   * report doubled effects.
   */
  breakInbox: boolean;
  /** The longest the system gets to settle once the faults stop. */
  settleS: number;
}

export const USAGE = `deno task drill [options]

  --duration S        seconds of load and faults (default 60)
  --seed N            repeat a run's schedule (default: random, printed)
  --faults a,b        fault kinds to draw from (default: all that apply):
                      ${FAULT_KINDS.join(", ")}
  --transport T       postgres (default) or jetstream (needs nats-server)
  --cluster           three nats-servers, NATS_REPLICAS=3 (with jetstream)
  --workers N         N worker processes beside the web app (default 0)
  --split             a database per service
  --rate R            paid orders per second (default 4)
  --shoppers N        shoppers, each in a sandbox of its own (default 4)
  --settle S          the longest wait for the system to settle (default 120)
  --out DIR           where drill.json and drill.html go (default .data/drill)
  --break-inbox       test only: the CRM receiver skips its inbox check`;

/** A bad command line; the message says which option and what was given. */
export class UsageError extends Error {
  override name = "UsageError";
}

function number(name: string, raw: string | undefined, min: number): number {
  const n = Number(raw);
  if (raw === undefined || !Number.isFinite(n) || n < min) {
    throw new UsageError(`${name} must be a number >= ${min} (got ${raw})`);
  }
  return n;
}

/** Parses `args`; throws {@link UsageError} on anything it does not know. */
export function parseOptions(args: string[]): DrillOptions {
  const o: DrillOptions = {
    seed: Math.floor(Math.random() * 2 ** 31),
    durationS: 60,
    faults: [],
    transport: "postgres",
    cluster: false,
    workers: 0,
    split: false,
    rate: 4,
    shoppers: 4,
    out: ".data/drill",
    breakInbox: false,
    settleS: 120,
  };
  let faults: string[] | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const value = () => args[++i];
    switch (arg) {
      case "--duration":
        o.durationS = number(arg, value(), 5);
        break;
      case "--seed":
        o.seed = Math.floor(number(arg, value(), 0));
        break;
      case "--faults":
        faults = (value() ?? "").split(",").filter(Boolean);
        break;
      case "--transport": {
        const t = value();
        if (t !== "postgres" && t !== "jetstream") {
          throw new UsageError(`--transport is postgres or jetstream (${t})`);
        }
        o.transport = t;
        break;
      }
      case "--cluster":
        o.cluster = true;
        break;
      case "--workers":
        o.workers = Math.floor(number(arg, value(), 0));
        break;
      case "--split":
        o.split = true;
        break;
      case "--rate":
        o.rate = number(arg, value(), 0.1);
        break;
      case "--shoppers":
        o.shoppers = Math.floor(number(arg, value(), 1));
        break;
      case "--settle":
        o.settleS = number(arg, value(), 5);
        break;
      case "--out":
        o.out = value() ?? o.out;
        break;
      case "--break-inbox":
        o.breakInbox = true;
        break;
      default:
        throw new UsageError(`unknown option ${arg}`);
    }
  }
  if (o.cluster && o.transport !== "jetstream") {
    throw new UsageError("--cluster needs --transport jetstream");
  }
  for (const f of faults ?? []) {
    if (!(FAULT_KINDS as readonly string[]).includes(f)) {
      throw new UsageError(
        `unknown fault ${f}; known: ${FAULT_KINDS.join(", ")}`,
      );
    }
  }
  const usable = FAULT_KINDS.filter((k) => applies(k, o));
  o.faults = faults ? usable.filter((k) => faults!.includes(k)) : usable;
  return o;
}

/** Whether fault `kind` can happen in this setup. */
function applies(kind: FaultKind, o: DrillOptions): boolean {
  if (kind === "worker_kill") return o.workers > 0;
  if (kind === "nats_kill" || kind === "nats_wipe") {
    return o.transport === "jetstream";
  }
  return true;
}
