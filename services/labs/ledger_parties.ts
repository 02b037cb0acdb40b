/**
 * The failure ledger's two parties and the relay between them, on the
 * project's own pieces: the sender appends to its outbox in its own
 * transaction (lib/outbox), the relay claims, sends and marks with the
 * relay's statements (lib/relay), and the receiver applies each instruction
 * once through its inbox (lib/inbox). The sender (`lab_sender`) and the
 * receiver (`lab_receiver`) are services of their own, with their own roles
 * and schemas (migrations/0007_labs.sql): no transaction spans the two.
 *
 * | instruction  | no job               | job scheduled            | job cancelled        |
 * | ------------ | -------------------- | ------------------------ | -------------------- |
 * | JobRequested | schedule it          | 422, refused: one job    | not newer: stale, 200|
 * | JobCancelled | keep it as cancelled | cancel it, if newer      | stale, 200           |
 */
import { z } from "zod";
import type { Sql } from "../../lib/db/connect.ts";
import { asService, type ServiceTx } from "../../lib/db/service.ts";
import { type Received, receiveOnce, Refused } from "../../lib/inbox/mod.ts";
import { append, type Envelope, newEnvelope } from "../../lib/outbox/mod.ts";
import {
  claimOutbox,
  failPublish,
  markPublished,
} from "../../lib/outbox/mod.ts";

export const SENDER = "lab_sender";
export const RECEIVER = "lab_receiver";

/** The order of the story. */
export const ORDER = "O42";

/** A claimed row is the relay's for this long; a run ends well before. */
const LEASE_MS = 30_000;

/** A failed send is due again at once: the lab decides when to relay. */
const RETRY_MS = 0;

/** Re-arms per sandbox and day before the relay's loop guard parks rows. */
const GUARD_LIMIT = 1_000_000;

/** What each instruction carries besides its envelope's fields. */
const payloadSchema = z.object({ label: z.string().min(1).max(10) });

/** Instruction `label` (M7) about order O42, as the sender writes it. */
export function instruction(
  sandboxId: string,
  label: string,
  type: "JobRequested" | "JobCancelled",
  version: number,
  occurredAt?: Date,
): Envelope {
  const envelope = newEnvelope({
    type,
    aggregateId: ORDER,
    aggregateVersion: version,
    tenantId: sandboxId,
    payload: { label },
  });
  if (occurredAt) envelope.occurredAt = occurredAt.toISOString();
  return envelope;
}

/** The sender's command was stopped where the scenario says. */
export class Stopped extends Error {
  override name = "Stopped";
}

/**
 * One sender command: `change` in the sender's transaction, then its
 * instructions appended to the outbox in the same transaction (none for
 * the broken sender without an outbox). With `failBeforeCommit` the
 * transaction fails after both, and nothing of it stays.
 */
export async function senderCommand(
  sql: Sql,
  sandboxId: string,
  change: (tx: ServiceTx) => Promise<unknown>,
  instructions: Envelope[],
  options: { failBeforeCommit?: string } = {},
): Promise<void> {
  await asService(sql, SENDER, { tenantId: sandboxId }, async (tx) => {
    await change(tx);
    if (instructions.length > 0) await append(tx, instructions);
    if (options.failBeforeCommit) throw new Stopped(options.failBeforeCommit);
  });
}

/** The sender accepts order O42. */
export function placeOrder(tx: ServiceTx) {
  return tx.sql`insert into lab_sender.orders (tenant_id, order_id)
    values (${(tx.scope as { tenantId: string }).tenantId}, ${ORDER})`;
}

/** The sender cancels order O42: its version 2. */
export function cancelOrder(tx: ServiceTx) {
  return tx.sql`update lab_sender.orders
     set state = 'cancelled', version = version + 1
   where order_id = ${ORDER}`;
}

/** The sender changes O42 again (a second job asked for): a new version. */
export function touchOrder(tx: ServiceTx) {
  return tx.sql`update lab_sender.orders set version = version + 1
   where order_id = ${ORDER}`;
}

/** How the receiver's side of one send goes. */
export type Link =
  /** The receiver applies and answers; the answer reaches the relay. */
  | "answers"
  /** The receiver fails before its commit: nothing of it stays. */
  | "receiver-rolls-back"
  /** The receiver commits; its answer never reaches the relay. */
  | "ack-lost";

/**
 * The receiver: applies `envelope` once, through its inbox, in its own
 * transaction. An instruction older than the replay horizon that the inbox
 * has not seen is refused (lib/inbox).
 */
export async function receive(
  sql: Sql,
  envelope: Envelope,
  options: { link?: Link; replayHorizonDays: number },
): Promise<Received> {
  const crash = options.link === "receiver-rolls-back";
  return await receiveOnce(sql, RECEIVER, envelope, async (tx, e) => {
    const answer = await applyToJobs(tx, e);
    if (crash) throw new Error("the receiver failed before its commit");
    return answer;
  }, { replayHorizonDays: options.replayHorizonDays });
}

interface Job {
  label: string;
  state: "scheduled" | "cancelled";
  version: number;
}

async function applyToJobs(tx: ServiceTx, e: Envelope) {
  const { sql } = tx;
  const { label } = payloadSchema.parse(e.payload);
  const v = e.aggregateVersion;
  const [job] = await sql<Job[]>`
    select label, state, version from lab_receiver.jobs
     where order_id = ${e.aggregateId} for update`;
  const stale = job && job.version >= v;
  if (e.type === "JobRequested") {
    if (!job) {
      await sql`insert into lab_receiver.jobs
          (tenant_id, order_id, message_id, label, state, version)
        values (${e.tenantId}, ${e.aggregateId}, ${e.messageId}, ${label},
                'scheduled', ${v})`;
      return { label, job: "scheduled" };
    }
    if (job.state === "cancelled" && stale) {
      return {
        label,
        ignored: `stale: version ${v} came after version ${job.version}`,
      };
    }
    throw new Refused(
      `${label} asks for a second job for ${e.aggregateId}, which has one from ${job.label}`,
    );
  }
  if (!job) {
    await sql`insert into lab_receiver.jobs
        (tenant_id, order_id, message_id, label, state, version)
      values (${e.tenantId}, ${e.aggregateId}, ${e.messageId}, ${label},
              'cancelled', ${v})`;
    return { label, job: "cancelled before it was asked for" };
  }
  if (stale) {
    return { label, ignored: `stale: version ${v} after ${job.version}` };
  }
  await sql`update lab_receiver.jobs
     set state = 'cancelled', version = ${v}, message_id = ${e.messageId},
         label = ${label}, applied_at = now()
   where order_id = ${e.aggregateId}`;
  return { label, job: "cancelled" };
}

/** A row the lab's relay holds. */
export interface Held {
  id: number;
  tenantId: string;
  envelope: Envelope;
}

/** The lab's relay for one sandbox: claim, then send and mark. */
export class LabRelay {
  constructor(
    readonly sql: Sql,
    readonly sandboxId: string,
    readonly owner: string,
    readonly replayHorizonDays: number,
  ) {}

  /**
   * Claims up to `limit` due rows of this sandbox, oldest first: the claim
   * names the sandbox, so one visitor's run never moves another's rows.
   */
  async claim(limit = 10): Promise<Held[]> {
    const claimed = await claimOutbox(this.sql, SENDER, {
      owner: this.owner,
      limit,
      leaseMs: LEASE_MS,
      tenantIds: [this.sandboxId],
    });
    return claimed.rows;
  }

  /**
   * Sends each held row to the receiver. An answer (applied, or refused
   * with 422: a final word either way) deletes the row, owed no more; no answer
   * (the receiver rolled back, the acknowledgement was lost) keeps it
   * pending with the error, as a failed publish does.
   */
  async send(held: Held[], link: Link = "answers"): Promise<void> {
    for (const row of held) {
      try {
        await receive(this.sql, row.envelope, {
          link,
          replayHorizonDays: this.replayHorizonDays,
        });
        if (link === "ack-lost") {
          throw new Error("the receiver's answer never reached the relay");
        }
      } catch (error) {
        await failPublish(this.sql, SENDER, this.owner, {
          messageIds: [row.envelope.messageId],
          tenantIds: [row.tenantId],
          error: (error as Error).message,
          retryMs: RETRY_MS,
          guardLimit: GUARD_LIMIT,
        });
        continue;
      }
      await markPublished(this.sql, SENDER, this.owner, [
        row.envelope.messageId,
      ]);
    }
  }

  /** One pass: claim what is due, send it. */
  async pass(link: Link = "answers"): Promise<void> {
    await this.send(await this.claim(), link);
  }
}
