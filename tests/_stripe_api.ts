/**
 * Stripe's API as far as the bakery uses it, on loopback, so that a test
 * runs real Stripe mode with nothing reaching the network: Checkout
 * sessions, one per idempotency key, as Stripe keeps them. Events are
 * signed with the stripe library's own test helper and go through the
 * webhook's real verification.
 */
import Stripe from "stripe";
import type { Sql } from "../lib/db/connect.ts";
import { StripeGateway } from "../services/billing/gateway.ts";
import {
  postWebhook,
  TEST_WEBHOOK_SECRET,
  type TestBakery,
  withTestBakery,
} from "./_app.ts";

/** How long the stripe client waits for an answer. */
export const CLIENT_TIMEOUT_MS = 300;

export interface SeenRequest {
  path: string;
  idempotencyKey: string | null;
  form: URLSearchParams;
}

export interface CheckoutSession {
  id: string;
  object: "checkout.session";
  mode: "payment";
  url: string;
  /** The PaymentIntent Stripe opens with the session. */
  payment_intent: string;
  metadata: Record<string, string | null>;
}

/**
 * Starts the stand-in. `dropNext` makes the next create happen and its
 * answer never arrive, as when the app dies or the network fails after
 * Stripe created the session.
 */
export function stripeApi() {
  const seen: SeenRequest[] = [];
  const byKey = new Map<string, CheckoutSession>();
  const state = { dropNext: false };
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (request) => {
      const url = new URL(request.url);
      const form = new URLSearchParams(await request.text());
      const idempotencyKey = request.headers.get("idempotency-key");
      seen.push({ path: url.pathname, idempotencyKey, form });
      if (
        request.method !== "POST" || url.pathname !== "/v1/checkout/sessions"
      ) {
        return Response.json({ error: { message: "not here" } }, {
          status: 404,
        });
      }
      let session = idempotencyKey ? byKey.get(idempotencyKey) : undefined;
      if (!session) {
        const id = `cs_test_${crypto.randomUUID().replaceAll("-", "")}`;
        session = {
          id,
          object: "checkout.session",
          mode: "payment",
          url: `https://checkout.stripe.test/c/pay/${id}`,
          payment_intent: `pi_${crypto.randomUUID().replaceAll("-", "")}`,
          metadata: {
            paymentId: form.get("metadata[paymentId]"),
            orderId: form.get("metadata[orderId]"),
            sandboxId: form.get("metadata[sandboxId]"),
          },
        };
        if (idempotencyKey) byKey.set(idempotencyKey, session);
      }
      if (state.dropNext) {
        // Created, but the answer comes after the client stopped waiting.
        state.dropNext = false;
        await new Promise((r) => setTimeout(r, 4 * CLIENT_TIMEOUT_MS));
      }
      return Response.json(session);
    },
  );
  const url = `http://127.0.0.1:${server.addr.port}`;
  return {
    seen,
    sessions: byKey,
    state,
    /** STRIPE_API_URL for a whole bakery. */
    url,
    gateway: (sql: Sql) =>
      new StripeGateway("sk_test_for_the_suite", sql, {
        host: "127.0.0.1",
        port: server.addr.port,
        protocol: "http",
        maxNetworkRetries: 0,
        timeout: CLIENT_TIMEOUT_MS,
      }),
    stop: () => server.shutdown(),
  };
}

/** A Stripe event about `object`, as Stripe would send it. */
export function stripeEvent(type: string, object: Record<string, unknown>) {
  return {
    id: `evt_${crypto.randomUUID().replaceAll("-", "")}`,
    object: "event",
    api_version: "2025-01-27",
    type,
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    data: { object },
  };
}

/**
 * The session's PaymentIntent after a card was tried in Checkout: the
 * metadata it carries is the session's (`payment_intent_data`).
 */
export function intentOf(
  session: CheckoutSession,
  amountCents: number,
  outcome: "succeeded" | "declined",
) {
  return {
    id: session.payment_intent,
    object: "payment_intent",
    amount: amountCents,
    currency: "eur",
    status: outcome === "succeeded" ? "succeeded" : "requires_payment_method",
    metadata: session.metadata,
    last_payment_error: outcome === "succeeded"
      ? null
      : { message: "Your card was declined." },
  };
}

/** Signs `event` with the suite's secret and posts it to the webhook. */
export async function sendSigned(url: string, event: unknown) {
  const payload = JSON.stringify(event);
  const signature = await Stripe.webhooks.generateTestHeaderStringAsync({
    payload,
    secret: TEST_WEBHOOK_SECRET,
  });
  return await postWebhook(url, payload, signature);
}

/** Stripe's API on loopback, as {@link stripeApi} serves it. */
export type StripeApi = ReturnType<typeof stripeApi>;

/**
 * A bakery in real Stripe mode, its Stripe API the loopback one: pay
 * requests open Checkout sessions there, and the tests send the events.
 */
export async function withStripeBakery(
  fn: (t: TestBakery, api: StripeApi) => Promise<void>,
) {
  const api = stripeApi();
  try {
    await withTestBakery((t) => fn(t, api), {
      STRIPE_SECRET_KEY: "sk_test_for_the_suite",
      STRIPE_API_URL: api.url,
    });
  } finally {
    await api.stop();
  }
}
