/**
 * A receiver's batch endpoint (lib/delivery/send_batch.ts is its client):
 * parse the envelopes, apply them in one transaction of the receiver
 * (`receiveBatch`), and answer each.
 *
 * | answer                   | meaning                                   |
 * | ------------------------ | ----------------------------------------- |
 * | 200 `{ results: [...] }` | each message's own status (200, 409, 422, |
 * |                          | 500; 400 for one that is not an envelope) |
 * | 400                      | not a batch, or messages of two tenants   |
 * | 413                      | more messages than a batch may carry      |
 * | 500                      | the transaction failed: nothing applied,  |
 * |                          | or the inbox answers it on the retry      |
 *
 * A batch of a tenant whose wipe has begun is answered 200, each message
 * 422, and each refusal recorded in `platform.closed_refusals`.
 *
 * The step from parsed envelopes to the answer is a `BatchReceiver`, which
 * a decorator may wrap (lib/faults `faultyReceiver`: 503, slow), as the
 * single endpoint's `Receiver`.
 */
import { TenantClosed } from "../db/closed.ts";
import type { Logger } from "../log/mod.ts";
import {
  batchRequestSchema,
  type Envelope,
  MAX_BATCH,
} from "../outbox/envelope.ts";
import { receiveBatch } from "./batch.ts";
import type { ApplyMany } from "./apply_many.ts";
import {
  type InboxHandlerOptions,
  json,
  jsonBody,
  parseEnvelope,
  refuseClosed,
} from "./handler.ts";

/** A receiver's answer to a batch of one tenant's envelopes. */
export type BatchReceiver = (envelopes: Envelope[]) => Promise<Response>;

export interface InboxBatchHandlerOptions
  extends Omit<InboxHandlerOptions, "wrap"> {
  /** The receiver's effects as one statement a batch (apply_many.ts). */
  applyMany?: ApplyMany;
  /** Wraps the receiver (e.g. with its fault switches). */
  wrap?: (receiver: BatchReceiver) => BatchReceiver;
}

interface Result {
  messageId: string;
  status: number;
  body: Record<string, unknown>;
}

export function inboxBatchHandler(options: InboxBatchHandlerOptions) {
  const inner = batchReceiver(options);
  const receiver = options.wrap ? options.wrap(inner) : inner;
  return async (request: Request): Promise<Response> => {
    const raw = await jsonBody(request);
    if (raw instanceof Response) return raw;
    const batch = batchRequestSchema.safeParse(raw);
    if (!batch.success) {
      const messages = (raw as { messages?: unknown })?.messages;
      return Array.isArray(messages) && messages.length > MAX_BATCH
        ? json(413, { error: `at most ${MAX_BATCH} messages in a batch` })
        : json(400, { error: "not a batch: { messages: [envelope, ...] }" });
    }
    const valid: Envelope[] = [];
    const malformed: Result[] = [];
    batch.data.messages.forEach((message, i) => {
      const envelope = parseEnvelope(message);
      if (typeof envelope !== "string") return valid.push(envelope);
      const id = (message as { messageId?: unknown })?.messageId;
      malformed.push({
        messageId: typeof id === "string" ? id : `#${i}`,
        status: 400,
        body: { error: envelope },
      });
    });
    if (new Set(valid.map((e) => e.tenantId)).size > 1) {
      return json(400, { error: "a batch holds the messages of one tenant" });
    }
    if (valid.length === 0) return json(200, { results: malformed });
    const answer = await receiver(valid);
    if (answer.status !== 200 || malformed.length === 0) return answer;
    const { results } = await answer.json() as { results: Result[] };
    return json(200, { results: [...results, ...malformed] });
  };
}

/** The receiver: the batch applied, each message answered. */
function batchReceiver(options: InboxBatchHandlerOptions): BatchReceiver {
  return async (envelopes) => {
    try {
      const answers = await receiveBatch(
        options.sql,
        options.service,
        envelopes,
        options.apply,
        {
          replayHorizonDays: options.replayHorizonDays,
          applyMany: options.applyMany,
        },
      );
      return json(200, {
        results: answers.map((a) => {
          if (a.error) logError(options.log, options.service, a, a.error);
          return {
            messageId: a.messageId,
            status: a.status,
            body: a.status === 500
              ? { error: `${options.label} failed: ${a.body.error}` }
              : { ...a.body, duplicate: a.duplicate },
          };
        }),
      });
    } catch (error) {
      if (error instanceof TenantClosed) {
        return await closed(options, envelopes, error);
      }
      logError(options.log, options.service, envelopes[0], error);
      return json(500, {
        error: `${options.label} failed: ${(error as Error).message}`,
      });
    }
  };
}

/**
 * A batch of a tenant being wiped (or wiped): nothing of it is applied.
 * Each message is refused (422: dead at once), and each refusal is a row
 * that the wipe keeps.
 */
async function closed(
  options: InboxBatchHandlerOptions,
  envelopes: readonly Envelope[],
  error: TenantClosed,
): Promise<Response> {
  for (const envelope of envelopes) {
    await refuseClosed(options, envelope, error);
  }
  return json(200, {
    results: envelopes.map((e) => ({
      messageId: e.messageId,
      status: 422,
      body: { reason: error.message },
    })),
  });
}

function logError(
  log: Logger,
  service: string,
  first: { messageId: string },
  error: unknown,
) {
  log.error("receiver_error", { service, messageId: first.messageId, error });
}
