/** `POST /webhooks/stripe`: the raw body is verified, then recorded once. */
import type { Context } from "hono";
import type { Deps } from "../../deps.ts";
import { handleStripeWebhook } from "../../services/billing/webhook.ts";

const MAX_BODY = 256 * 1024;

export function stripeWebhook(deps: Deps) {
  return async (c: Context) => {
    const raw = await c.req.text();
    if (raw.length > MAX_BODY) return c.json({ error: "body too large" }, 413);
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
