/**
 * The test checkout's outbox: the Stripe events that settle test-mode
 * payments. An event is written in the transaction that opens its payment
 * and posted, signed as Stripe signs it, until /webhooks/stripe answers 2xx.
 * Real Stripe keeps an event and retries it for three days; this checkout
 * keeps the same promise on a schedule compressed to about an hour
 * (the setting CHECKOUT_RETRY_DELAYS_MS). After the last retry the event is a row in
 * state `gave_up` that the console shows, never only a log line.
 */
import { contextOf, currentTraceparent, inSpan } from "../../lib/trace/mod.ts";
import Stripe from "stripe";
import type { Sql } from "../../lib/db/connect.ts";
import { asService, type ServiceTx } from "../../lib/db/service.ts";
import type { Logger } from "../../lib/log/mod.ts";
import { Loop, type TickResult } from "../../lib/wake/loop.ts";

/**
 * Event states, mirrored by the CHECK on billing.checkout_events
 * (migrations/0010_checkout_events.sql).
 *
 * - `pending`: written with its payment; the sender moves it out.
 * - `delivered`: final; the webhook answered 2xx.
 * - `gave_up`: the last retry failed; an operator's "send again" makes it
 *   pending with a fresh schedule.
 */
export type CheckoutEventState = "pending" | "delivered" | "gave_up";

/** Events claimed per round: posts go out together, one round trip each. */
const BATCH = 20;
/** A post answers within this, or counts as failed. */
const POST_TIMEOUT_MS = 10_000;
/** A claim outlives its posts; past it, another sender takes the event. */
const LEASE_MS = POST_TIMEOUT_MS * 3;

/** Writes an event in the caller's billing transaction. */
export async function enqueueCheckoutEvent(
  tx: ServiceTx,
  sandboxId: string,
  paymentId: string,
  event: { id: string },
): Promise<void> {
  await tx.sql`
    insert into billing.checkout_events
      (event_id, tenant_id, payment_id, payload, traceparent)
    values (${event.id}, ${sandboxId}, ${paymentId}, ${JSON.stringify(event)},
            ${currentTraceparent() ?? null})`;
}

interface Claimed {
  event_id: string;
  tenant_id: string;
  payload: string;
  attempts: number;
  traceparent: string | null;
  lease_token: string;
}

export interface CheckoutSenderOptions {
  sql: Sql;
  log: Logger;
  webhookSecret: string;
  /** The app's own /webhooks/stripe URL, known once it listens. */
  webhookUrl: () => string;
  pollMs: number;
  /** The wait after each failed post; past the last, the event gives up. */
  retryDelaysMs: readonly number[];
  /** Called with the sandboxes whose events changed state. */
  onTouched?: (sandboxIds: string[]) => void;
}

/**
 * Posts due events. Several senders (one per web process) share the table:
 * a claim takes due rows with SKIP LOCKED and a token of its own, and every
 * finishing write is fenced by that token.
 */
export class CheckoutSender {
  #options: CheckoutSenderOptions;
  #loop: Loop;
  #delays: readonly number[];

  constructor(options: CheckoutSenderOptions) {
    this.#options = options;
    this.#delays = options.retryDelaysMs;
    this.#loop = new Loop({
      name: "checkout_events",
      tick: () => this.tick(),
      pollMs: options.pollMs,
      log: options.log,
      onTouched: options.onTouched,
    });
  }

  start(): void {
    this.#loop.start();
  }

  /** Asks for a round now: an event was just committed. */
  wake(): void {
    this.#loop.wake();
  }

  /** Stops claiming; waits for the posts under way. */
  async stop(): Promise<void> {
    await this.#loop.stop();
  }

  /** One round: claim due events, post them, record each answer. */
  async tick(): Promise<TickResult> {
    const { sql } = this.#options;
    const claimed = await asService(
      sql,
      "billing",
      "workers",
      ({ sql }) =>
        sql<Claimed[]>`
        with due as (
          select event_id from billing.checkout_events
           where state = 'pending' and next_attempt_at <= now()
           order by next_attempt_at
           limit ${BATCH}
           for update skip locked
        )
        update billing.checkout_events e
           set lease_token = gen_random_uuid(), attempts = e.attempts + 1,
               next_attempt_at = now() + ${LEASE_MS} * interval '1 millisecond'
          from due where e.event_id = due.event_id
        returning e.event_id, e.tenant_id, e.payload, e.attempts, e.lease_token,
                  e.traceparent`,
    );
    await Promise.all(claimed.map((event) => this.#deliver(event)));
    const [next] = await asService(
      sql,
      "billing",
      "workers",
      ({ sql }) =>
        sql<{ at: Date | null }[]>`
        select min(next_attempt_at) as at from billing.checkout_events
         where state = 'pending'`,
    );
    return {
      more: claimed.length === BATCH,
      nextDueAt: next?.at ?? undefined,
      touched: [...new Set(claimed.map((c) => c.tenant_id))],
    };
  }

  async #deliver(event: Claimed): Promise<void> {
    const { log } = this.#options;
    // In the pay request's trace: the webhook's request and the payment's
    // message join it.
    const answer = await inSpan("checkout webhook", {
      kind: "producer",
      parent: contextOf(event.traceparent ?? undefined),
      attributes: {
        "bakery.checkout_event": event.event_id,
        "bakery.attempt": event.attempts,
      },
    }, () => this.#post(event.payload));
    if (answer.ok) {
      await this.#finish(event, {
        state: "delivered",
        status: answer.status,
        error: null,
      });
      return;
    }
    const delay = this.#delays[event.attempts - 1];
    const error = answer.error ?? `the webhook answered ${answer.status}`;
    if (delay === undefined) {
      log.error("checkout_event_gave_up", {
        eventId: event.event_id,
        attempts: event.attempts,
        error,
      });
      await this.#finish(event, {
        state: "gave_up",
        status: answer.status,
        error,
      });
      return;
    }
    log.warn("checkout_event_failed", {
      eventId: event.event_id,
      attempt: event.attempts,
      error,
    });
    await this.#finish(event, {
      state: "pending",
      status: answer.status,
      error,
      retryMs: delay,
    });
  }

  async #post(
    payload: string,
  ): Promise<{ ok: boolean; status: number | null; error?: string }> {
    try {
      const signature = await Stripe.webhooks.generateTestHeaderStringAsync({
        payload,
        secret: this.#options.webhookSecret,
      });
      const response = await fetch(this.#options.webhookUrl(), {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "stripe-signature": signature,
        },
        body: payload,
        signal: AbortSignal.timeout(POST_TIMEOUT_MS),
      });
      await response.body?.cancel();
      return { ok: response.ok, status: response.status };
    } catch (error) {
      return { ok: false, status: null, error: (error as Error).message };
    }
  }

  async #finish(
    event: Claimed,
    outcome: {
      state: CheckoutEventState;
      status: number | null;
      error: string | null;
      retryMs?: number;
    },
  ): Promise<void> {
    const final = outcome.state !== "pending";
    await asService(this.#options.sql, "billing", "workers", ({ sql }) =>
      sql`
        update billing.checkout_events
           set state = ${outcome.state}, last_status = ${outcome.status},
               last_error = ${outcome.error}, lease_token = null,
               next_attempt_at = now() + ${
        outcome.retryMs ?? 0
      } * interval '1 millisecond',
               finished_at = case when ${final} then now() end
         where event_id = ${event.event_id}
           and lease_token = ${event.lease_token} and state = 'pending'`);
  }
}
