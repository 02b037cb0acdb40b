/**
 * Traces, through Deno's built-in OpenTelemetry and `@opentelemetry/api`.
 * Off unless the process starts with `OTEL_DENO=true`: then Deno exports
 * OTLP (`OTEL_EXPORTER_OTLP_ENDPOINT`), traces its HTTP server and its
 * fetches itself (passing `traceparent` on), and the spans here join them.
 *
 * A message carries the W3C trace context of the write that made it in its
 * envelope (`traceparent`), so that its delivery attempts and the
 * receivers' applies, in other processes and much later, join that trace.
 * Off, every helper here costs a branch.
 */
import {
  type Context,
  context,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";

/** Whether this process exports traces (read once, as Deno reads it). */
export const tracing: boolean = (() => {
  try {
    return Deno.env.get("OTEL_DENO") === "true";
  } catch {
    return false;
  }
})();

const tracer = trace.getTracer("outbox");

export type Attributes = Record<string, string | number | boolean>;

export { ROOT_CONTEXT };

/** The `traceparent` of the active span, where tracing is on and one is. */
export function currentTraceparent(): string | undefined {
  if (!tracing) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent;
}

/** The context a stored `traceparent` names (the root one without it). */
export function contextOf(traceparent: string | undefined): Context {
  if (!traceparent) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, { traceparent });
}

/** A link to each span these `traceparent`s name. */
export function linksTo(traceparents: readonly (string | undefined)[]): Link[] {
  const links: Link[] = [];
  for (const tp of traceparents) {
    const span = tp ? trace.getSpanContext(contextOf(tp)) : undefined;
    if (span) links.push({ context: span });
  }
  return links;
}

/** The trace id of a `traceparent`, or null. */
export function traceIdOf(traceparent: string | undefined | null) {
  return traceparent?.split("-")[1] ?? null;
}

/**
 * Runs `fn` in a span named `name`, a child of `parent` (the active
 * context by default), ended when `fn` settles; a throw marks it failed.
 * Without tracing, runs `fn` alone.
 */
export function inSpan<T>(
  name: string,
  options: {
    attributes?: Attributes;
    parent?: Context;
    links?: Link[];
    kind?: "internal" | "producer" | "consumer";
  },
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (!tracing) return fn(undefined);
  const kind = options.kind === "producer"
    ? SpanKind.PRODUCER
    : options.kind === "consumer"
    ? SpanKind.CONSUMER
    : SpanKind.INTERNAL;
  return tracer.startActiveSpan(
    name,
    { attributes: options.attributes, links: options.links, kind },
    options.parent ?? context.active(),
    async (span) => {
      try {
        return await fn(span);
      } catch (error) {
        span.recordException(error as Error);
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: (error as Error).message,
        });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/**
 * Starts a span that the caller ends (`end`), for work whose end is
 * reported elsewhere: one delivery of a batch. Without tracing, nothing.
 */
export function startSpan(
  name: string,
  options: { attributes?: Attributes; parent?: Context; kind?: "producer" },
): Span | undefined {
  if (!tracing) return undefined;
  return tracer.startSpan(
    name,
    {
      attributes: options.attributes,
      kind: options.kind === "producer" ? SpanKind.PRODUCER : SpanKind.CLIENT,
    },
    options.parent ?? context.active(),
  );
}

/**
 * A span for work already done, from `startTime` to now: the relay's move,
 * whose links (the messages it carried) are known only once it is over.
 * Without tracing, nothing.
 */
export function recordSpan(
  name: string,
  options: { startTime: number; attributes?: Attributes; links?: Link[] },
) {
  if (!tracing) return;
  tracer.startSpan(name, {
    startTime: options.startTime,
    attributes: options.attributes,
    links: options.links,
    kind: SpanKind.PRODUCER,
  }, ROOT_CONTEXT).end();
}

/** Runs `fn` with `span` active (as is, without one). */
export function withSpan<T>(span: Span | undefined, fn: () => T): T {
  if (!span) return fn();
  return context.with(trace.setSpan(context.active(), span), fn);
}

/** Ends `span` with these attributes, failed when `failed`. */
export function endSpan(
  span: Span | undefined,
  attributes: Attributes,
  failed = false,
) {
  if (!span) return;
  span.setAttributes(attributes);
  if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}
