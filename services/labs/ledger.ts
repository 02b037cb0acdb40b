/**
 * The failure ledger of order O42 and its instruction M7, run for real:
 * each scenario runs the sender's, the relay's and the receiver's
 * transactions (services/labs/ledger_parties.ts) inside the visitor's
 * sandbox, stops at its named point, and reports what the rows say. The
 * figures are counted from the rows after the run, never written down.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { asService } from "../../lib/db/service.ts";
import {
  cancelOrder,
  instruction,
  LabRelay,
  placeOrder,
  receive,
  RECEIVER,
  SENDER,
  senderCommand,
  Stopped,
  touchOrder,
} from "./ledger_parties.ts";
import { onePerSandbox } from "./lock.ts";

/** One scenario: what it is, what its rows mean, what recovery must do. */
export interface Scenario {
  name: string;
  title: string;
  /** A broken design, run to show what it loses or invents. */
  broken: boolean;
  meaning: string;
  recovery: string;
}

export const SCENARIOS: readonly Scenario[] = [
  {
    name: "fail-before-commit",
    title: "The sender fails before its commit",
    broken: false,
    meaning:
      "O42 and M7 were written in one transaction that failed: neither stays, so nobody owes or holds anything.",
    recovery:
      "Nothing to recover: the customer was told the order failed and may place it again.",
  },
  {
    name: "stop-before-publish",
    title: "The relay stops before it publishes",
    broken: false,
    meaning:
      "O42 is accepted and M7 waits in the sender's outbox, pending: the promise is written down, the receiver has not heard.",
    recovery:
      "The relay, restarted, claims the pending row and sends M7; the outbox row is the whole of what recovery needs.",
  },
  {
    name: "receiver-rollback",
    title: "The receiver rolls back",
    broken: false,
    meaning:
      "The receiver failed before its commit, so it holds no inbox row and no job; the relay got no answer and kept M7 pending with the error.",
    recovery:
      "The relay sends M7 again; the receiver applies it as if for the first time.",
  },
  {
    name: "lost-ack",
    title: "The acknowledgement is lost",
    broken: false,
    meaning:
      "The receiver committed M7 (inbox row and job), but its answer never came back, so the sender still owes M7: both sides hold a row for it.",
    recovery:
      "The relay must send M7 again, and the receiver's inbox must answer the repeat without a second job.",
  },
  {
    name: "lost-ack-redelivered",
    title: "Lost acknowledgement, redelivered, then acknowledged",
    broken: false,
    meaning:
      "M7 went twice; the second time the inbox knew its id, answered as before and changed nothing. One job, and nothing owed.",
    recovery: "Done: at least once delivery, applied once.",
  },
  {
    name: "no-outbox",
    title: "Broken: the order is saved without its outbox row",
    broken: true,
    meaning:
      "O42 is accepted but M7 was never written anywhere: there is nothing pending and no job, and no row says that anything is missing.",
    recovery:
      "None is possible from the rows: the instruction is lost. Only writing the order and its instruction in one transaction prevents it.",
  },
  {
    name: "send-first",
    title: "Broken: published first, then the sender's commit fails",
    broken: true,
    meaning:
      "The receiver scheduled a job for M7, but the sender's transaction failed after the send: a job for an order that was never accepted.",
    recovery:
      "The sender has no row to compare with; someone must find the orphan job and undo it by hand.",
  },
  {
    name: "contradictory-instruction",
    title: "A contradictory instruction (M9) after M7",
    broken: false,
    meaning:
      "M9 asked for a second job for O42. The receiver refused it and recorded the refusal with its reason; M7 and its job are kept, and the sender owes nothing more.",
    recovery:
      "An operator reads the refusal; the sender must correct its own state rather than resend M9.",
  },
  {
    name: "stale-version",
    title: "A late creation after a cancellation",
    broken: false,
    meaning:
      "M8 (cancel O42, version 2) overtook M7 (create, version 1), held by a slower relay. The receiver kept the cancellation and answered M7 as stale: no job, both ids in its inbox.",
    recovery:
      "Nothing: the versions decided it. Without them the late M7 would have scheduled a job for a cancelled order.",
  },
  {
    name: "replay-horizon",
    title: "An instruction older than the replay horizon",
    broken: false,
    meaning:
      "M7 waited in the outbox past the receiver's replay horizon. An old message it has not seen may be a replay it can no longer tell apart, so it refused M7 and recorded why; no job.",
    recovery:
      "An operator decides: send a fresh instruction with a new id, or close the order by hand.",
  },
];

/** The figures of a run, counted from the rows. */
export interface LedgerResult {
  scenario: string;
  sender: { orders: number; pending: number };
  receiver: { inbox: number; jobs: number; refusals: number };
  explanation: string;
}

export function findScenario(name: string): Scenario | undefined {
  return SCENARIOS.find((s) => s.name === name);
}

/** Runs `scenario` from a clean slate in `sandboxId`; the rows' figures. */
export async function runLedger(
  sql: Sql,
  sandboxId: string,
  scenario: Scenario,
  options: { replayHorizonDays: number },
): Promise<LedgerResult> {
  return await onePerSandbox(sandboxId, async () => {
    await cleanSlate(sql, sandboxId);
    await play(sql, sandboxId, scenario.name, options.replayHorizonDays);
    return {
      scenario: scenario.name,
      ...await figures(sql, sandboxId),
      explanation: `${scenario.meaning} ${scenario.recovery}`,
    };
  });
}

async function play(
  sql: Sql,
  sandboxId: string,
  name: string,
  horizonDays: number,
) {
  const relay = new LabRelay(sql, sandboxId, "lab-relay", horizonDays);
  const m7 = instruction(sandboxId, "M7", "JobRequested", 1);
  const place = (failBeforeCommit?: string) =>
    sender(sql, sandboxId, placeOrder, [m7], failBeforeCommit);
  switch (name) {
    case "fail-before-commit":
      await place("the sender's transaction failed before its commit");
      return await relay.pass();
    case "stop-before-publish":
      return await place();
    case "receiver-rollback":
      await place();
      return await relay.pass("receiver-rolls-back");
    case "lost-ack":
      await place();
      return await relay.pass("ack-lost");
    case "lost-ack-redelivered":
      await place();
      await relay.pass("ack-lost");
      return await relay.pass();
    case "no-outbox":
      await sender(sql, sandboxId, placeOrder, []);
      return await relay.pass();
    case "send-first":
      await receive(sql, m7, { replayHorizonDays: horizonDays });
      return await sender(
        sql,
        sandboxId,
        placeOrder,
        [],
        "the sender's commit failed after it had sent M7",
      );
    case "contradictory-instruction": {
      await place();
      await relay.pass();
      const m9 = instruction(sandboxId, "M9", "JobRequested", 2);
      await sender(sql, sandboxId, touchOrder, [m9]);
      return await relay.pass();
    }
    case "stale-version": {
      await place();
      // A slow relay claims M7 and stalls; the sender cancels; a second
      // relay finds M7 leased, takes M8 alone and delivers it; then the
      // slow one delivers M7.
      const slow = new LabRelay(sql, sandboxId, "lab-relay-slow", horizonDays);
      const held = await slow.claim(1);
      const m8 = instruction(sandboxId, "M8", "JobCancelled", 2);
      await sender(sql, sandboxId, cancelOrder, [m8]);
      await relay.pass();
      return await slow.send(held);
    }
    case "replay-horizon": {
      const old = new Date(Date.now() - (horizonDays + 5) * 86_400_000);
      const late = instruction(sandboxId, "M7", "JobRequested", 1, old);
      await sender(sql, sandboxId, placeOrder, [late]);
      return await relay.pass();
    }
    default:
      throw new TypeError(`no ledger scenario ${JSON.stringify(name)}`);
  }
}

/** A sender command; a stop the scenario asked for is where it ends. */
async function sender(
  sql: Sql,
  sandboxId: string,
  change: Parameters<typeof senderCommand>[2],
  instructions: Parameters<typeof senderCommand>[3],
  failBeforeCommit?: string,
) {
  try {
    await senderCommand(sql, sandboxId, change, instructions, {
      failBeforeCommit,
    });
  } catch (error) {
    if (!(error instanceof Stopped)) throw error;
  }
}

/** Deletes this sandbox's lab rows on both sides. */
async function cleanSlate(sql: Sql, sandboxId: string) {
  await asService(sql, SENDER, { tenantId: sandboxId }, async ({ sql }) => {
    await sql`delete from lab_sender.outbox`;
    await sql`delete from lab_sender.relay_guard`;
    await sql`delete from lab_sender.orders`;
  });
  await asService(sql, RECEIVER, { tenantId: sandboxId }, async ({ sql }) => {
    await sql`delete from lab_receiver.jobs`;
    await sql`delete from lab_receiver.refusals`;
    await sql`delete from lab_receiver.order_violations`;
    await sql`delete from lab_receiver.inbox`;
  });
}

/** The figures, counted from each side's rows, each as its own service. */
export async function figures(sql: Sql, sandboxId: string) {
  const [sender] = await asService(
    sql,
    SENDER,
    { tenantId: sandboxId },
    ({ sql }) =>
      sql<{ orders: number; pending: number }[]>`
      select (select count(*)::int from lab_sender.orders) as orders,
             (select count(*)::int from lab_sender.outbox) as pending`,
  );
  const [receiver] = await asService(
    sql,
    RECEIVER,
    { tenantId: sandboxId },
    ({ sql }) =>
      sql<{ inbox: number; jobs: number; refusals: number }[]>`
      select (select count(*)::int from lab_receiver.inbox
               where status = 200) as inbox,
             (select count(*)::int from lab_receiver.jobs
               where state = 'scheduled') as jobs,
             (select count(*)::int from lab_receiver.refusals) as refusals`,
  );
  return {
    sender: { orders: sender.orders, pending: sender.pending },
    receiver: {
      inbox: receiver.inbox,
      jobs: receiver.jobs,
      refusals: receiver.refusals,
    },
  };
}

/** The rows a run left behind, for the page. */
export interface LedgerRows {
  orders: { orderId: string; state: string; version: number }[];
  outbox: {
    label: string;
    type: string;
    state: string;
    attempts: number;
    lastError: string | null;
  }[];
  inbox: { messageId: string; type: string; status: number; outcome: string }[];
  jobs: { orderId: string; label: string; state: string; version: number }[];
  refusals: { messageId: string; type: string; reason: string }[];
}

export async function ledgerRows(
  sql: Sql,
  sandboxId: string,
): Promise<LedgerRows> {
  const scope = { tenantId: sandboxId };
  const [orders, outbox] = await asService(
    sql,
    SENDER,
    scope,
    ({ sql }) =>
      Promise.all([
        sql<LedgerRows["orders"]>`
        select order_id as "orderId", state, version from lab_sender.orders
         order by order_id`,
        sql<LedgerRows["outbox"]>`
        select envelope->'payload'->>'label' as label, type, state, attempts,
               last_error as "lastError"
          from lab_sender.outbox order by id`,
      ]),
  );
  const [inbox, jobs, refusals] = await asService(
    sql,
    RECEIVER,
    scope,
    ({ sql }) =>
      Promise.all([
        sql<LedgerRows["inbox"]>`
        select message_id::text as "messageId", type, status,
               outcome::text as outcome
          from lab_receiver.inbox order by received_at, message_id`,
        sql<LedgerRows["jobs"]>`
        select order_id as "orderId", label, state, version
          from lab_receiver.jobs order by order_id`,
        sql<LedgerRows["refusals"]>`
        select message_id::text as "messageId", type, reason
          from lab_receiver.refusals order by id`,
      ]),
  );
  return {
    orders: [...orders],
    outbox: [...outbox],
    inbox: [...inbox],
    jobs: [...jobs],
    refusals: [...refusals],
  };
}
