/**
 * The Stripe webhook: verify the signature on the raw body (300 s
 * tolerance), then record the event. Anything unverifiable is a 400 and
 * changes nothing; an event billing refuses (a payment of another sandbox)
 * is recorded and answered 422; an event for a sandbox being wiped is
 * refused with a row of platform.closed_refusals, and answered 200.
 */
import Stripe from "stripe";
import type { Sql } from "../../lib/db/connect.ts";
import { HttpError } from "../../kit/http/errors.ts";
import { recordClosedRefusal, TenantClosed } from "../../lib/db/closed.ts";
import {
  type EventOutcome,
  recordStripeEvent,
  stripeEventSchema,
} from "./payments.ts";
import { sandboxClosedMessage } from "../sandboxes.ts";

export const SIGNATURE_TOLERANCE_S = 300;

export async function handleStripeWebhook(
  sql: Sql,
  secret: string,
  rawBody: string,
  signature: string | null,
): Promise<EventOutcome> {
  if (!signature) throw new HttpError(400, "missing Stripe-Signature header");
  let event: unknown;
  try {
    event = await Stripe.webhooks.constructEventAsync(
      rawBody,
      signature,
      secret,
      SIGNATURE_TOLERANCE_S,
    );
  } catch (error) {
    throw new HttpError(
      400,
      `signature verification failed: ${(error as Error).message}`,
    );
  }
  const parsed = stripeEventSchema.safeParse(event);
  if (!parsed.success) {
    throw new HttpError(
      400,
      "not a Stripe event",
      parsed.error.issues.map((i) => ({
        path: i.path.join("."),
        message: i.message,
      })),
    );
  }
  let recorded: EventOutcome;
  try {
    recorded = await recordStripeEvent(sql, parsed.data);
  } catch (error) {
    if (!(error instanceof TenantClosed)) throw error;
    // An event for a sandbox being wiped (or wiped) changes nothing. It is
    // answered 2xx, so that Stripe stops sending it, and the refusal is a
    // row that the wipe keeps.
    await recordClosedRefusal(sql, {
      tenantId: error.tenantId,
      refusedBy: "billing",
      what: "webhook",
      key: parsed.data.id,
      reason: sandboxClosedMessage(error),
    });
    return {
      duplicate: false,
      outcome: `refused: ${sandboxClosedMessage(error)}`,
      status: 200,
    };
  }
  // Recorded (committed) first: the refusal is a row, and a repeat of the
  // event gets the same answer.
  if (recorded.status === 422) throw new HttpError(422, recorded.outcome);
  return recorded;
}

/** STRIPE_WEBHOOK_SECRET, or one generated once and kept in the data dir. */
export async function webhookSecret(
  configured: string | undefined,
  dataDir: string,
) {
  if (configured) return configured;
  const path = `${dataDir}/stripe_webhook_secret`;
  try {
    return (await Deno.readTextFile(path)).trim();
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  const secret = "whsec_" +
    btoa(String.fromCharCode(...bytes)).replace(/[^A-Za-z0-9]/g, "");
  await Deno.mkdir(dataDir, { recursive: true });
  await Deno.writeTextFile(path, secret + "\n", { mode: 0o600 });
  return secret;
}
