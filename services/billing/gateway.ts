/**
 * How a payment is taken. With STRIPE_SECRET_KEY, a real Stripe Checkout
 * session. Without it, a test-mode checkout inside the app that takes
 * Stripe's test card numbers and sends a Stripe-signed event to
 * /webhooks/stripe over real HTTP, so the verification path is the real one
 * in both modes.
 */
import Stripe from "stripe";
import type { Sql } from "../../lib/db/connect.ts";
import { HttpError } from "../../lib/http/errors.ts";
import type { Logger } from "../../lib/log/mod.ts";
import { createPayment, CURRENCY, setCheckoutUrl } from "./open_payment.ts";
import { randomHex } from "../../lib/hash.ts";

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
  /** Waits for webhook sends still under way (test mode). */
  drain(): Promise<void>;
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
  #inFlight = new Set<Promise<void>>();

  constructor(
    private readonly options: {
      sql: Sql;
      log: Logger;
      webhookSecret: string;
      /** The app's own /webhooks/stripe URL, known once it listens. */
      webhookUrl: () => string;
    },
  ) {}

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
    const opened = await createPayment(this.options.sql, request.sandboxId, {
      id: `pi_test_${randomHex(12)}`,
      orderId: request.orderId,
      amountCents: request.amountCents,
      cardLast4: number.slice(-4),
    });
    // A payment under way (or made) for this order: the same one again,
    // never a second charge.
    if (!opened.created) return { paymentId: opened.id };
    const paymentId = opened.id;
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
    const sending = this.#send(JSON.stringify(event)).finally(() =>
      this.#inFlight.delete(sending)
    );
    this.#inFlight.add(sending);
    return { paymentId };
  }

  /** Signs and posts like Stripe does, retrying a few times on failure. */
  async #send(payload: string) {
    const { log, webhookSecret } = this.options;
    for (let attempt = 1; attempt <= 5; attempt++) {
      try {
        const signature = await Stripe.webhooks.generateTestHeaderStringAsync({
          payload,
          secret: webhookSecret,
        });
        const response = await fetch(this.options.webhookUrl(), {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "stripe-signature": signature,
          },
          body: payload,
        });
        await response.body?.cancel();
        if (response.ok) return;
        log.warn("test_webhook_refused", { status: response.status, attempt });
      } catch (error) {
        log.warn("test_webhook_failed", { error, attempt });
      }
      await new Promise((r) => setTimeout(r, 200 * 2 ** attempt));
    }
    log.error("test_webhook_gave_up", { payload });
  }

  async drain() {
    await Promise.all([...this.#inFlight]);
  }
}

/** The real thing: Stripe Checkout; the webhook settles the payment. */
export class StripeGateway implements PaymentGateway {
  readonly mode = "stripe";
  #stripe: Stripe;

  constructor(secretKey: string, private readonly sql: Sql) {
    this.#stripe = new Stripe(secretKey);
  }

  /**
   * Opens the payment first (one per order at a time, as in test mode),
   * then its Checkout session, whose payment intent names the payment in
   * its metadata for the webhook.
   */
  async pay(request: PayRequest): Promise<PayResult> {
    const opened = await createPayment(this.sql, request.sandboxId, {
      id: `pay_${randomHex(12)}`,
      orderId: request.orderId,
      amountCents: request.amountCents,
    });
    if (!opened.created) {
      return {
        paymentId: opened.id,
        checkoutUrl: opened.checkoutUrl ?? undefined,
      };
    }
    const metadata = {
      sandboxId: request.sandboxId,
      orderId: request.orderId,
      paymentId: opened.id,
    };
    let session: Stripe.Checkout.Session;
    try {
      session = await this.#stripe.checkout.sessions.create({
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
      });
    } catch (error) {
      // No checkout, no payment: the next pay request opens a new one.
      await setCheckoutUrl(
        this.sql,
        request.sandboxId,
        opened.id,
        null,
        `no checkout: ${(error as Error).message}`,
      );
      throw error;
    }
    await setCheckoutUrl(
      this.sql,
      request.sandboxId,
      opened.id,
      session.url ?? null,
    );
    return { paymentId: opened.id, checkoutUrl: session.url ?? undefined };
  }

  drain() {
    return Promise.resolve();
  }
}
