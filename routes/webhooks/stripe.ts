/**
 * `POST /webhooks/stripe`: the raw body is verified, then recorded once. The
 * app refuses a body over `WEBHOOK_MAX_BODY` before this handler reads it
 * (kit/http/body_limit.ts).
 */
import type { Context } from "hono";
import type { Deps } from "../../deps.ts";
import { handleStripeWebhook } from "../../services/billing/webhook.ts";

/** Stripe's events are a few KiB; 256 KiB leaves room for large metadata. */
export const WEBHOOK_MAX_BODY = 256 * 1024;

export function stripeWebhook(deps: Deps) {
  return async (c: Context) => {
    const raw = await c.req.text();
    const result = await handleStripeWebhook(
      deps.sql,
      deps.webhookSecret,
      raw,
      c.req.header("stripe-signature") ?? null,
    );
    deps.log.info("stripe_event", { ...result });
    return c.json({ received: true, ...result });
  };
}
