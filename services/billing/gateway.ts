/**
 * How a payment is taken. With STRIPE_SECRET_KEY, a real Stripe Checkout
 * session. Without it, a test-mode checkout inside the app that takes
 * Stripe's test card numbers and sends a Stripe-signed event to
 * /webhooks/stripe over real HTTP, so the verification path is the real one
 * in both modes.
 */
import Stripe from "stripe";
import type { Sql } from "../../lib/db/connect.ts";
import { HttpError } from "../../kit/http/errors.ts";
import type { Logger } from "../../lib/log/mod.ts";
import { createPayment, CURRENCY, setCheckoutUrl } from "./open_payment.ts";
import { randomHex } from "../../lib/hash.ts";
import { CheckoutSender, enqueueCheckoutEvent } from "./checkout_events.ts";

export interface PayRequest {
  sandboxId: string;
  orderId: string;
  amountCents: number;
  /** Test mode only: the card number typed in. */
  card?: string;
  /** Where Stripe Checkout returns the visitor. */
  returnUrl: string;
}

export interface PayResult {
  paymentId: string;
  /** Real Stripe: where to send the visitor. */
  checkoutUrl?: string;
}

export interface PaymentGateway {
  readonly mode: "test" | "stripe";
  pay(request: PayRequest): Promise<PayResult>;
  /** Starts what the gateway runs beside the web app, once it listens. */
  start(): void;
  /** Asks for a round of sending now (test mode; no-op otherwise). */
  wake(): void;
  /** Stops it, before the web server stops (its posts need the server). */
  stop(): Promise<void>;
}

/** Stripe's documented test cards that this checkout understands. */
const TEST_CARDS: Record<string, { ok: boolean; message?: string }> = {
  "4242424242424242": { ok: true },
  "4000000000000002": { ok: false, message: "Your card was declined." },
  "4000000000009995": {
    ok: false,
    message: "Your card has insufficient funds.",
  },
};

export class TestModeGateway implements PaymentGateway {
  readonly mode = "test";
  #sender: CheckoutSender;

  constructor(
    private readonly options: {
      sql: Sql;
      log: Logger;
      webhookSecret: string;
      /** The app's own /webhooks/stripe URL, known once it listens. */
      webhookUrl: () => string;
      pollMs: number;
      retryDelaysMs: readonly number[];
    },
  ) {
    this.#sender = new CheckoutSender({
      sql: options.sql,
      log: options.log,
      webhookSecret: options.webhookSecret,
      webhookUrl: options.webhookUrl,
      pollMs: options.pollMs,
      retryDelaysMs: options.retryDelaysMs,
    });
  }

  /**
   * Opens the payment and writes the Stripe event that settles it in one
   * billing transaction; the sender posts the event after the commit. A
   * crash at any point leaves both or neither, and a restarted sender
   * posts what is still owed.
   */
  async pay(request: PayRequest): Promise<PayResult> {
    const number = (request.card ?? "").replace(/[\s-]/g, "");
    // Own keys only: "constructor" or "__proto__" is not a test card.
    const card = Object.hasOwn(TEST_CARDS, number)
      ? TEST_CARDS[number]
      : undefined;
    if (!card) {
      throw new HttpError(
        400,
        "use a Stripe test card, such as 4242 4242 4242 4242",
        [
          {
            path: "card",
            message: "not a Stripe test card this checkout knows",
          },
        ],
      );
    }
    const paymentId = `pi_test_${randomHex(12)}`;
    const event = {
      id: `evt_test_${randomHex(12)}`,
      object: "event",
      api_version: "2025-01-27",
      created: Math.floor(Date.now() / 1000),
      livemode: false,
      type: card.ok
        ? "payment_intent.succeeded"
        : "payment_intent.payment_failed",
      data: {
        object: {
          id: paymentId,
          object: "payment_intent",
          amount: request.amountCents,
          currency: CURRENCY,
          status: card.ok ? "succeeded" : "requires_payment_method",
          metadata: { sandboxId: request.sandboxId, orderId: request.orderId },
          last_payment_error: card.ok ? null : { message: card.message },
        },
      },
    };
    // A payment under way (or made) for this order comes back as it is:
    // never a second charge, never a second event.
    const opened = await createPayment(this.options.sql, request.sandboxId, {
      id: paymentId,
      orderId: request.orderId,
      amountCents: request.amountCents,
      cardLast4: number.slice(-4),
    }, async (tx) => {
      await enqueueCheckoutEvent(tx, request.sandboxId, paymentId, event);
      tx.afterCommit(() => this.#sender.wake());
    });
    return { paymentId: opened.id };
  }

  start(): void {
    this.#sender.start();
  }

  wake(): void {
    this.#sender.wake();
  }

  async stop(): Promise<void> {
    await this.#sender.stop();
  }
}

/** Where the Stripe client sends its requests (tests: a local server). */
export type StripeApiOptions = Pick<
  Stripe.StripeConfig,
  "host" | "port" | "protocol" | "maxNetworkRetries" | "timeout"
>;

/** The client options that send Stripe's API requests to `url` instead. */
export function stripeApiAt(url: string | undefined): StripeApiOptions {
  if (!url) return {};
  const at = new URL(url);
  const protocol = at.protocol === "http:" ? "http" : "https";
  return {
    host: at.hostname,
    port: Number(at.port) || (protocol === "http" ? 80 : 443),
    protocol,
  };
}

/** The real thing: Stripe Checkout; the webhook settles the payment. */
export class StripeGateway implements PaymentGateway {
  readonly mode = "stripe";
  #stripe: Stripe;

  constructor(
    secretKey: string,
    private readonly sql: Sql,
    api: StripeApiOptions = {},
  ) {
    this.#stripe = new Stripe(secretKey, api);
  }

  /**
   * Opens the payment first (one per order at a time, as in test mode),
   * then its Checkout session, whose payment intent names the payment in
   * its metadata for the webhook. The session is created with the payment's
   * id as Stripe's idempotency key: a crash between creating it and keeping
   * its URL leaves a pending payment without one, and the next pay request
   * asks again with the same key and gets the same session back.
   */
  async pay(request: PayRequest): Promise<PayResult> {
    const opened = await createPayment(this.sql, request.sandboxId, {
      id: `pay_${randomHex(12)}`,
      orderId: request.orderId,
      amountCents: request.amountCents,
    });
    if (opened.checkoutUrl || opened.state !== "pending") {
      return {
        paymentId: opened.id,
        checkoutUrl: opened.checkoutUrl ?? undefined,
      };
    }
    const session = await this.#checkout(request, opened.id);
    await setCheckoutUrl(
      this.sql,
      request.sandboxId,
      opened.id,
      session.url ?? null,
    );
    return { paymentId: opened.id, checkoutUrl: session.url ?? undefined };
  }

  async #checkout(
    request: PayRequest,
    paymentId: string,
  ): Promise<Stripe.Checkout.Session> {
    const metadata = {
      sandboxId: request.sandboxId,
      orderId: request.orderId,
      paymentId,
    };
    try {
      return await this.#stripe.checkout.sessions.create({
        mode: "payment",
        line_items: [{
          quantity: 1,
          price_data: {
            currency: CURRENCY,
            unit_amount: request.amountCents,
            product_data: {
              name: `Outbox Bakery order ${request.orderId.slice(-8)}`,
            },
          },
        }],
        payment_intent_data: { metadata },
        metadata,
        success_url: request.returnUrl,
        cancel_url: request.returnUrl,
      }, { idempotencyKey: paymentId });
    } catch (error) {
      // Unanswered (no connection, a timeout, Stripe's own trouble): the
      // session may exist, so the payment stays pending and the next pay
      // request asks again under the same key. Refused: no session will
      // ever come of this payment, and the next pay request opens another.
      if (!answeredNo(error)) {
        throw new HttpError(503, "Stripe did not answer; pay again to retry");
      }
      await setCheckoutUrl(
        this.sql,
        request.sandboxId,
        paymentId,
        null,
        `no checkout: ${(error as Error).message}`,
      );
      throw new HttpError(
        422,
        `Stripe refused the checkout: ${(error as Error).message}`,
      );
    }
  }

  start(): void {}

  wake(): void {}

  stop(): Promise<void> {
    return Promise.resolve();
  }
}

/** Stripe answered, and the answer was no: a 4xx other than 409 or 429. */
function answeredNo(error: unknown): boolean {
  if (!(error instanceof Stripe.errors.StripeError)) return false;
  const status = error.statusCode ?? 0;
  return status >= 400 && status < 500 && status !== 409 && status !== 429;
}
