/**
 * The Queue Lab: workers take orders from the PostgreSQL queue (the
 * ledger's messages, deliveries, leases, retries and dead letters:
 * lib/ledger, lib/carriers/postgres) and print oven
 * tickets, rows in `lab_printer.tickets`. It starts where the outbox ends:
 * the messages are in the queue already, as the relay leaves them.
 *
 * - A crash after printing and before acknowledging: the worker claimed a
 *   delivery, the printer printed, and the worker never recorded it. Its
 *   lease runs out, another worker (or the same one, restarted) claims the
 *   delivery again, and the printer prints it again, unless it remembers
 *   the ids it has printed (an inbox, lib/inbox).
 * - A poison order jams the printer (503) every time: retried with short
 *   delays, and a dead letter after four tries.
 */
import { z } from "zod";
import type { Sql } from "../../lib/db/connect.ts";
import { asService, poolOf, type ServiceTx } from "../../lib/db/service.ts";
import { receiveOnce } from "../../lib/inbox/mod.ts";
import type { Logger } from "../../lib/log/mod.ts";
import { envelopeSchema, newEnvelope } from "../../lib/outbox/mod.ts";
import {
  type AttemptResult,
  claimBatch,
  type ClaimedDelivery,
  deleteSubscriberRows,
  finishDeliveries,
  Ledger,
  renewLease,
} from "../../lib/ledger/mod.ts";
import { Dispatcher, sendAll } from "../../lib/delivery/mod.ts";
import { oneAtATime } from "./lock.ts";

export const PRINTER = "lab_printer";
const SOURCE = "lab_queue";
const TYPE = "OvenTicketOrdered";
const PRINTER_URL = "http://printer.lab.internal/tickets";

/**
 * Short delays, so that a run takes about a second: three retries, so a
 * poison order is dead after four tries.
 */
export const LAB_RETRY_DELAYS_MS = [40, 80, 120] as const;
/**
 * A crashed worker's delivery is claimed again once this lease runs out.
 * A live worker renews it while it sends and records (see {@link holdLease}),
 * so however slow a loaded machine makes a send, only a crash lets the
 * lease run out, and the only duplicate is the crash's.
 */
const LEASE_MS = 1_000;
/**
 * How often a live worker renews its lease: four times a lease, so that
 * three renewals in a row may be late or slow before it runs out.
 */
const RENEW_MS = LEASE_MS / 4;
/** A crashed worker is back after this long. */
const RESTART_MS = 150;
/** How often an idle worker looks for due deliveries. */
const IDLE_MS = 15;
/** A run that has not finished by then stops (and says so). */
const RUN_LIMIT_MS = 20_000;

export const CRASHES = ["after-print-before-ack"] as const;

export const queueLabSchema = z.object({
  orders: z.number().int().min(1).max(50),
  workers: z.number().int().min(1).max(5).default(3),
  crash: z.enum(CRASHES).nullable().default(null),
  poisonOrders: z.number().int().min(0).max(5).default(0),
  receiverRemembers: z.boolean(),
}).strict().refine((s) => s.poisonOrders <= s.orders, {
  path: ["poisonOrders"],
  message: "at most as many poison orders as orders",
});

export type QueueLabSettings = z.output<typeof queueLabSchema>;

/** One delivery of an order to the printer, as a worker saw it. */
export interface TimelineEntry {
  worker: number;
  order: number;
  attempt: number;
  /** Milliseconds from the start of the run. */
  startMs: number;
  endMs: number;
  /** A ticket came out of the printer for this delivery. */
  printed: boolean;
  /** That ticket was the order's second (or later). */
  duplicate: boolean;
  /** The printer answered from its record of printed ids. */
  remembered: boolean;
  outcome: "acked" | "crashed" | "retry" | "dead";
  error: string | null;
}

export interface QueueLabResult {
  tickets: number;
  duplicates: number;
  deadLetters: number;
  deliveries: number;
  timeline: TimelineEntry[];
}

const payloadSchema = z.object({
  order: z.number().int().min(1),
  poison: z.boolean(),
});

/** Runs the lab in `sandboxId` from a clean slate; the rows' figures. */
export async function runQueueLab(
  sql: Sql,
  log: Logger,
  sandboxId: string,
  settings: QueueLabSettings,
): Promise<QueueLabResult> {
  sql = printerDatabase(sql);
  return await oneAtATime(async () => {
    await cleanSlate(sql, sandboxId);
    const timeline = await play(sql, log, sandboxId, settings);
    const figures = await queueFigures(sql, sandboxId);
    const queued = {
      deadLetters: figures.deadLetters,
      deliveries: figures.deliveries,
    };
    await asService(
      sql,
      PRINTER,
      { tenantId: sandboxId },
      ({ sql }) =>
        sql`insert into lab_printer.runs
                   (tenant_id, settings, timeline, queue_figures)
          values (${sandboxId}, ${sql.json(settings as never)},
                  ${sql.json(timeline as never)}, ${sql.json(queued)})`,
    );
    // The run's figures and timeline are kept in its row; its queue rows go,
    // so that the console, its alerts and failure groups show only the
    // bakery's own dead letters.
    await clearQueueRows(sql, sandboxId);
    return { ...figures, timeline };
  });
}

/**
 * The pool of the printer's database. The lab's queue lives beside the
 * printer: in split mode that is the printer's own database, away from the
 * bakery's queues; with one database it is the bakery's queue.
 */
function printerDatabase(sql: Sql): Sql {
  return poolOf(sql, PRINTER);
}

/** The printer: one ticket per request, or per message id if it remembers. */
function printer(sql: Sql, worker: number, remembers: boolean, heard: Heard) {
  return async (request: Request): Promise<Response> => {
    const envelope = envelopeSchema.parse(await request.json());
    const { order, poison } = payloadSchema.parse(envelope.payload);
    const attempt = Number(request.headers.get("x-delivery-attempt"));
    if (poison) {
      return Response.json(
        { error: `the printer jams on order ${order}` },
        { status: 503 },
      );
    }
    const print = (tx: ServiceTx) =>
      tx.sql`insert into lab_printer.tickets
          (tenant_id, message_id, order_no, worker, attempt)
        values (${envelope.tenantId}, ${envelope.messageId}, ${order},
                ${worker}, ${attempt})`;
    if (remembers) {
      const received = await receiveOnce(sql, PRINTER, envelope, async (tx) => {
        await print(tx);
        return { printed: order };
      }, { replayHorizonDays: 3650 });
      heard.set(
        envelope.messageId,
        received.duplicate ? "remembered" : "printed",
      );
    } else {
      await asService(sql, PRINTER, { tenantId: envelope.tenantId }, print);
      heard.set(envelope.messageId, "printed");
    }
    return Response.json({ printed: order });
  };
}

/** What the printer did with the last request for each message id. */
type Heard = Map<string, "printed" | "remembered">;

async function play(
  sql: Sql,
  log: Logger,
  sandboxId: string,
  settings: QueueLabSettings,
): Promise<TimelineEntry[]> {
  const queue = new Ledger(sql, { [TYPE]: [PRINTER] });
  const firstPoison = settings.orders - settings.poisonOrders + 1;
  await queue.publish(
    Array.from({ length: settings.orders }, (_, i) => ({
      source: SOURCE,
      envelope: newEnvelope({
        type: TYPE,
        aggregateId: `Q${i + 1}`,
        aggregateVersion: 1,
        tenantId: sandboxId,
        payload: { order: i + 1, poison: i + 1 >= firstPoison },
      }),
    })),
  );
  const started = performance.now();
  const now = () => Math.round(performance.now() - started);
  const timeline: TimelineEntry[] = [];
  let crashAt: number | null = settings.crash ? 1 : null;
  const runId = crypto.randomUUID().slice(0, 8);

  const worker = async (n: number) => {
    let generation = 0;
    const heard: Heard = new Map();
    const dispatcher = new Dispatcher().register(
      PRINTER_URL,
      printer(sql, n, settings.receiverRemembers, heard),
    );
    for (;;) {
      if (now() > RUN_LIMIT_MS) {
        throw new Error(`the queue lab did not finish in ${RUN_LIMIT_MS} ms`);
      }
      const owner = `lab-${runId}-w${n}-${generation}`;
      const { claimed } = await claimBatch(sql, owner, {
        limit: 1,
        leaseMs: LEASE_MS,
        round: {
          after: null,
          perTenant: 1,
        },
        subscribers: [PRINTER],
      });
      if (claimed.length === 0) {
        if (await openDeliveries(sql, sandboxId) === 0) return;
        await sleep(IDLE_MS);
        continue;
      }
      const d = claimed[0];
      const startMs = now();
      heard.delete(d.messageId);
      const lease = holdLease(sql, sandboxId, d.id, owner);
      const [result] = await sendAll({
        owner,
        dispatcher,
        subscribers: { [PRINTER]: { url: PRINTER_URL, label: "Printer" } },
        retryDelaysMs: LAB_RETRY_DELAYS_MS,
        timeoutMs: 5_000,
        log,
      }, [d]);
      const order = orderOf(d);
      const crashes = crashAt === order && result.state === "done";
      timeline.push(entry(n, d, result, heard, startMs, now(), crashes));
      if (crashes) {
        // The worker dies here: the printer has printed, the delivery is
        // not recorded, and nobody renews the lease. It runs out; a worker
        // claims the delivery again.
        await lease.stop();
        crashAt = null;
        await sleep(RESTART_MS);
        generation++;
        continue;
      }
      try {
        await finishDeliveries(sql, [result]);
      } finally {
        await lease.stop();
      }
    }
  };
  await Promise.all(
    Array.from({ length: settings.workers }, (_, i) => worker(i + 1)),
  );
  return markDuplicates(timeline);
}

/**
 * Renews the lease of delivery `id` every {@link RENEW_MS} until stop(),
 * fenced by `owner`: a lease already lost (taken over, finished) is left
 * alone. One renewal at a time; stop() waits for the one under way, so
 * that none lands after the worker let go.
 */
function holdLease(sql: Sql, sandboxId: string, id: number, owner: string) {
  let running: Promise<void> = Promise.resolve();
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    running = extendLease(sql, sandboxId, id, owner)
      // A renewal that fails is tried again at the next tick; the lease
      // runs out only if every one fails, as a crashed worker's does.
      .catch(() => {})
      .finally(() => busy = false);
  }, RENEW_MS);
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}

/** Moves the end of `owner`'s lease on delivery `id` to a lease from now. */
async function extendLease(
  sql: Sql,
  sandboxId: string,
  id: number,
  owner: string,
): Promise<void> {
  await asService(
    sql,
    "queue",
    { tenantId: sandboxId },
    ({ sql }) => renewLease(sql, id, owner, LEASE_MS),
  );
}

function orderOf(d: ClaimedDelivery): number {
  return payloadSchema.parse(d.envelope.payload).order;
}

function entry(
  worker: number,
  d: ClaimedDelivery,
  result: AttemptResult,
  heard: Heard,
  startMs: number,
  endMs: number,
  crashed: boolean,
): TimelineEntry {
  const did = heard.get(d.messageId);
  return {
    worker,
    order: orderOf(d),
    attempt: d.attempt,
    startMs,
    endMs,
    printed: did === "printed",
    duplicate: false,
    remembered: did === "remembered",
    outcome: crashed
      ? "crashed"
      : result.state === "done"
      ? "acked"
      : result.state === "pending"
      ? "retry"
      : "dead",
    error: result.error,
  };
}

/** Marks each print of an order after its first. */
function markDuplicates(timeline: TimelineEntry[]): TimelineEntry[] {
  const sorted = [...timeline].sort((a, b) => a.startMs - b.startMs);
  const printed = new Set<number>();
  for (const e of sorted) {
    if (!e.printed) continue;
    e.duplicate = printed.has(e.order);
    printed.add(e.order);
  }
  return sorted;
}

function sleep(ms: number) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function openDeliveries(sql: Sql, sandboxId: string): Promise<number> {
  const [row] = await asService(
    sql,
    "queue",
    { tenantId: sandboxId },
    ({ sql }) =>
      sql<{ n: number }[]>`
      select count(*)::int as n from queue.deliveries
       where subscriber = ${PRINTER} and state in ('pending', 'in_flight')`,
  );
  return row.n;
}

/** Deletes the lab's queue rows of this sandbox. */
async function clearQueueRows(sql: Sql, sandboxId: string) {
  await asService(
    sql,
    "queue",
    { tenantId: sandboxId },
    ({ sql }) => deleteSubscriberRows(sql, PRINTER, SOURCE),
  );
}

/** Deletes this sandbox's lab rows: the printer's, and its queue rows. */
async function cleanSlate(sql: Sql, sandboxId: string) {
  await clearQueueRows(sql, sandboxId);
  await asService(sql, PRINTER, { tenantId: sandboxId }, async ({ sql }) => {
    await sql`delete from lab_printer.tickets`;
    await sql`delete from lab_printer.refusals`;
    await sql`delete from lab_printer.order_violations`;
    await sql`delete from lab_printer.inbox`;
    await sql`delete from lab_printer.runs`;
  });
}

/** The figures, counted from the printer's and the queue's rows. */
export async function queueFigures(sql: Sql, sandboxId: string) {
  sql = printerDatabase(sql);
  const [printed] = await asService(
    sql,
    PRINTER,
    { tenantId: sandboxId },
    ({ sql }) =>
      sql<{ tickets: number; orders: number }[]>`
      select count(*)::int as tickets,
             count(distinct order_no)::int as orders
        from lab_printer.tickets`,
  );
  const [queued] = await asService(
    sql,
    "queue",
    { tenantId: sandboxId },
    ({ sql }) =>
      sql<{ dead: number; deliveries: number }[]>`
      select count(*) filter (where state = 'dead')::int as dead,
             coalesce(sum(attempts), 0)::int as deliveries
        from queue.deliveries where subscriber = ${PRINTER}`,
  );
  return {
    tickets: printed.tickets,
    duplicates: printed.tickets - printed.orders,
    deadLetters: queued.dead,
    deliveries: queued.deliveries,
  };
}

/** The last run of this sandbox, as the page shows it; null before one. */
export async function lastQueueRun(
  sql: Sql,
  sandboxId: string,
): Promise<
  | { settings: QueueLabSettings; result: QueueLabResult; ranAt: Date }
  | null
> {
  const [run] = await asService(
    sql,
    PRINTER,
    { tenantId: sandboxId },
    ({ sql }) =>
      sql<
        {
          settings: QueueLabSettings;
          timeline: TimelineEntry[];
          queue_figures: { deadLetters: number; deliveries: number };
          ran_at: Date;
        }[]
      >`select settings, timeline, queue_figures, ran_at
        from lab_printer.runs`,
  );
  if (!run) return null;
  const figures = await queueFigures(sql, sandboxId);
  return {
    settings: run.settings,
    result: { ...figures, ...run.queue_figures, timeline: run.timeline },
    ranAt: run.ran_at,
  };
}
