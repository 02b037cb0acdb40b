/**
 * The message envelope: what a sender stores in its outbox and what every
 * receiver gets, byte for byte. Version 2 of the envelope format, which
 * names the tenant `tenantId`; version 1 named it `sandboxId`, and stored
 * messages of version 1 are read as version 2 (see {@link tenantOf}).
 */
import { z } from "zod";
import { currentTraceparent } from "../trace/mod.ts";

/** "00".."ff", by byte value. */
const HEX = Array.from(
  { length: 256 },
  (_, b) => b.toString(16).padStart(2, "0"),
);

/** A UUID of version 7: time-ordered, so ids sort roughly by creation. */
export function uuidv7(now = Date.now()): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  // 48 bits of milliseconds since the epoch, big-endian.
  let ms = now;
  for (let i = 5; i >= 0; i--) {
    b[i] = ms % 256;
    ms = Math.floor(ms / 256);
  }
  b[6] = (b[6] & 0x0f) | 0x70; // version 7
  b[8] = (b[8] & 0x3f) | 0x80; // RFC 9562 variant
  return HEX[b[0]] + HEX[b[1]] + HEX[b[2]] + HEX[b[3]] + "-" + HEX[b[4]] +
    HEX[b[5]] + "-" + HEX[b[6]] + HEX[b[7]] + "-" + HEX[b[8]] + HEX[b[9]] +
    "-" + HEX[b[10]] + HEX[b[11]] + HEX[b[12]] + HEX[b[13]] + HEX[b[14]] +
    HEX[b[15]];
}

const uuid = z.string().regex(
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
  "a lower-case UUID",
);

/**
 * Copies in one line of supersessions at the most: a dead letter corrected
 * this often wants its receiver fixed, not another copy.
 */
export const MAX_SUPERSEDES = 20;

/**
 * A version 1 envelope as version 2: `sandboxId` becomes `tenantId`. Both
 * at once is left as it is, for the schema to refuse.
 */
function upgrade(value: unknown): unknown {
  if (
    typeof value !== "object" || value === null || "tenantId" in value ||
    !("sandboxId" in value)
  ) return value;
  const { sandboxId, ...rest } = value as Record<string, unknown>;
  return { ...rest, tenantId: sandboxId };
}

/** Version 2, as it is written. */
const version2 = z.object({
  /** Stable forever: the receivers' inboxes are keyed by it. */
  messageId: uuid,
  type: z.string().regex(
    /^[A-Z][A-Za-z]{1,60}$/,
    "an event type such as OrderPaid",
  ),
  /** Version of `payload`'s shape for this type. */
  schemaVersion: z.number().int().min(1),
  /** The object the message is about, e.g. an order id. */
  aggregateId: z.string().min(1).max(100),
  /** The object's version after the change; receivers ignore stale ones. */
  aggregateVersion: z.number().int().min(1),
  /** The tenant the message belongs to. */
  tenantId: uuid,
  occurredAt: z.string().datetime({ offset: true }),
  payload: z.record(z.string(), z.unknown()),
  /**
   * Set on a corrected copy only: the message ids it stands in for, the
   * first original first, then each copy that came between (a copy of a
   * copy names the whole line). A receiver whose inbox has applied any of
   * them applies nothing and answers as to a repeat (lib/inbox). Absent on
   * every other message, so an envelope without it is as before.
   */
  supersedes: z.array(uuid).min(1).max(MAX_SUPERSEDES).optional(),
  /**
   * W3C trace context of the write that made the message, where the sender
   * traces (lib/trace): its deliveries and applies join that trace.
   */
  traceparent: z.string().regex(
    /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/,
    "a W3C traceparent",
  ).optional(),
}).strict().refine((e) => !e.supersedes?.includes(e.messageId), {
  path: ["supersedes"],
  message: "a message cannot supersede itself",
});

/**
 * The envelope schema; receivers parse every delivery with it. It takes
 * either version, and gives version 2.
 */
export const envelopeSchema = z.preprocess(upgrade, version2);

export type Envelope = z.output<typeof envelopeSchema>;

/**
 * The tenant of an envelope read from storage without the schema (a row of
 * an outbox or of the queue, a broker's message), which may be of version
 * 1. An envelope the schema parsed has `tenantId` always.
 */
export function tenantOf(envelope: Envelope): string {
  return envelope.tenantId ??
    (envelope as unknown as { sandboxId: string }).sandboxId;
}

/**
 * Builds a new envelope with a fresh UUIDv7 and the current time, and the
 * active trace context where tracing is on.
 */
export function newEnvelope(
  fields: Omit<Envelope, "messageId" | "occurredAt" | "schemaVersion"> & {
    schemaVersion?: number;
  },
): Envelope {
  const traceparent = currentTraceparent();
  return {
    messageId: uuidv7(),
    occurredAt: new Date().toISOString(),
    schemaVersion: 1,
    ...(traceparent ? { traceparent } : {}),
    ...fields,
  };
}

/**
 * The most envelopes one batch request may carry: a receiver's batch is
 * one transaction, and its lock time grows with it.
 */
export const MAX_BATCH = 100;

/**
 * A batch of envelopes as a consumer POSTs it to a receiver's batch
 * endpoint (lib/delivery/send_batch.ts, lib/inbox/batch_handler.ts). Each
 * envelope is checked on its own by the receiver.
 */
export const batchRequestSchema = z.object({
  messages: z.array(z.unknown()).min(1).max(MAX_BATCH),
});

/** The receiver's answer to a batch: one result per message, any order. */
export const batchAnswerSchema = z.object({
  results: z.array(z.object({
    messageId: z.string(),
    status: z.number().int().min(100).max(599),
    body: z.unknown(),
  })),
});
