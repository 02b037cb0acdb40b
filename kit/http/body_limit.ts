/**
 * Request body limits, before anything reads a body: Hono's `bodyLimit`
 * (hono/body-limit) with a limit chosen per request. It decides from
 * `Content-Length` alone when the header is there (HTTP/1.1 framing holds a
 * body to it), so an oversized body is refused before a byte of it is read.
 * A chunked body is read through a counter that stops at the first chunk
 * past the limit; at most the limit is ever buffered, and the rest of the
 * upload is never read. Either way the answer is a 413.
 */
import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HttpError } from "./errors.ts";

/** The most bytes a request's body may have; chosen per request. */
export type LimitOf = (c: Context) => number;

/**
 * A middleware that refuses a body over `limitOf(c)` bytes with
 * HttpError(413) ("request body over 64 KiB"). Apply it before any
 * middleware that reads bodies (form parsing for CSRF checks included).
 *
 * @example
 * ```ts
 * app.use("*", bodyLimits((c) =>
 *   c.req.path === "/webhooks/stripe" ? 256 * 1024 : 64 * 1024
 * ));
 * ```
 */
export function bodyLimits(limitOf: LimitOf): MiddlewareHandler {
  // One Hono middleware per distinct limit; a few routes share a few sizes.
  const bySize = new Map<number, MiddlewareHandler>();
  const forSize = (maxSize: number) => {
    let limit = bySize.get(maxSize);
    if (!limit) {
      limit = bodyLimit({
        maxSize,
        onError: () => {
          throw new HttpError(413, `request body over ${kib(maxSize)}`);
        },
      });
      bySize.set(maxSize, limit);
    }
    return limit;
  };
  return (c, next) => forSize(limitOf(c))(c, next);
}

function kib(bytes: number): string {
  return `${Math.ceil(bytes / 1024)} KiB`;
}
