/**
 * A receiver as an HTTP handler: parse the envelope, run `receiveOnce` in
 * the receiver's own transaction, and answer with the status that tells the
 * consumer what to do.
 *
 * | answer | meaning                                              |
 * | ------ | ---------------------------------------------------- |
 * | 200    | applied now, or already applied before (`duplicate`) |
 * |        | a copy of an applied message: `alreadyApplied` and   |
 * |        | a `reason`, as a repeat                              |
 * | 400    | not an envelope                                      |
 * | 409    | not yet (NotYet): retry later                        |
 * | 422    | refused (Refused, malformed, horizon)                |
 *
 * The step from a parsed envelope to the answer is a `Receiver`, which a
 * decorator may wrap (lib/faults `faultyReceiver`: 503, slow).
 */
import { contextOf, inSpan, tracing } from "../trace/mod.ts";
import type { Sql } from "../db/connect.ts";
import { recordClosedRefusal, TenantClosed } from "../db/closed.ts";
import type { Logger } from "../log/mod.ts";
import { type Envelope, envelopeSchema } from "../outbox/envelope.ts";
import { NotYet } from "./errors.ts";
import { type Apply, receiveOnce } from "./receive.ts";

/** A receiver's answer to one envelope. */
export type Receiver = (envelope: Envelope) => Promise<Response>;

export interface InboxHandlerOptions {
  sql: Sql;
  /** The receiving service: its role, schema and inbox. */
  service: string;
  /** For answers: "Billing failed: ...". */
  label: string;
  apply: Apply;
  replayHorizonDays: number;
  log: Logger;
  /** Wraps the receiver (e.g. with its fault switches). */
  wrap?: (receiver: Receiver) => Receiver;
}

export function inboxHandler(options: InboxHandlerOptions) {
  const receiver = options.wrap
    ? options.wrap(inboxReceiver(options))
    : inboxReceiver(options);
  return async (request: Request): Promise<Response> => {
    const body = await jsonBody(request);
    if (body instanceof Response) return body;
    const envelope = parseEnvelope(body);
    if (typeof envelope === "string") return json(400, { error: envelope });
    if (!tracing) return await receiver(envelope);
    return await inSpan(
      `apply ${options.service}`,
      applySpan(options.service, envelope),
      async (span) => {
        const response = await receiver(envelope);
        span?.setAttribute("http.response.status_code", response.status);
        return response;
      },
    );
  };
}

/**
 * A receiver's apply of one message: a span of the message's own trace
 * (lib/trace), whichever request brought it.
 */
export function applySpan(service: string, envelope: Envelope) {
  return {
    kind: "consumer" as const,
    parent: contextOf(envelope.traceparent),
    attributes: {
      "messaging.message.id": envelope.messageId,
      "messaging.destination.name": service,
      "outbox.event_type": envelope.type,
    },
  };
}

/** The receiver: the envelope applied once, and the answer that says how. */
function inboxReceiver(options: InboxHandlerOptions): Receiver {
  return async (envelope) => {
    try {
      const result = await receiveOnce(
        options.sql,
        options.service,
        envelope,
        options.apply,
        { replayHorizonDays: options.replayHorizonDays },
      );
      return json(result.status, {
        ...result.body,
        duplicate: result.duplicate,
      });
    } catch (error) {
      if (error instanceof NotYet) return json(409, { reason: error.message });
      if (error instanceof TenantClosed) {
        // Nothing of a tenant being wiped is applied; the refusal is kept
        // where the wipe leaves it, and the delivery is dead at once.
        await refuseClosed(options, envelope, error);
        return json(422, { reason: error.message });
      }
      options.log.error("receiver_error", {
        service: options.service,
        messageId: envelope.messageId,
        error,
      });
      return json(500, {
        error: `${options.label} failed: ${(error as Error).message}`,
      });
    }
  };
}

/** Records that `envelope`, of a closed tenant, was refused, and why. */
export async function refuseClosed(
  options: Pick<InboxHandlerOptions, "sql" | "service">,
  envelope: Envelope,
  error: TenantClosed,
): Promise<void> {
  await recordClosedRefusal(options.sql, {
    tenantId: envelope.tenantId,
    refusedBy: options.service,
    what: "delivery",
    key: envelope.messageId,
    reason: error.message,
  });
}

/** A request's JSON body, or the 400 that says it is not JSON. */
export async function jsonBody(request: Request): Promise<unknown> {
  try {
    return await request.json();
  } catch {
    return json(400, { error: "malformed JSON" });
  }
}

/** `raw` as an envelope, or why it is not one (the first issue). */
export function parseEnvelope(raw: unknown): Envelope | string {
  const parsed = envelopeSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  return `not an envelope: ${issue.path.join(".")}: ${issue.message}`;
}

/** A JSON answer. */
export function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}
