/**
 * Parsing request input with zod: a failure is a 400 that names every field
 * that is wrong (`items.0.qty`), never a 500.
 */
import { z } from "zod";
import type { Context } from "hono";
import { HttpError, type Issue } from "./errors.ts";

/**
 * A string that PostgreSQL can store: no NUL character. PostgreSQL's text
 * (and jsonb's `\u0000`) refuses U+0000 with an error (22021, 22P05) that
 * would surface as a 500 after part of the work was done; refused here, the
 * 400 names the field like any other bad value. Every text field that comes
 * from outside and reaches the database starts with `text()`.
 *
 * @example
 * ```ts
 * const schema = z.object({ name: text().trim().min(1).max(80) });
 * schema.safeParse({ name: "A\u0000da" }).success; // false
 * ```
 */
export function text() {
  return z.string().refine((s) => !s.includes("\u0000"), {
    message: "must not contain a NUL character",
  });
}

/**
 * Turns zod issues into the API's `{ path, message }` list. An unknown key
 * is named by its own path (`customer.nickname`), not by its object's, so
 * that every issue points at the field that is wrong.
 */
export function toIssues(error: z.ZodError): Issue[] {
  return error.issues.flatMap((i) =>
    i.code === "unrecognized_keys"
      ? i.keys.map((key) => ({
        path: [...i.path, key].map(String).join("."),
        message: "unknown field",
      }))
      : [{ path: i.path.map(String).join("."), message: i.message }]
  );
}

/** Parses `value` or throws HttpError(400) naming the fields that are wrong. */
export function parseOr400<S extends z.ZodType>(
  schema: S,
  value: unknown,
  what = "request body",
): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = toIssues(result.error);
  const first = issues[0];
  throw new HttpError(
    400,
    `invalid ${what}: ${first.path || "(root)"}: ${first.message}`,
    issues,
  );
}

/**
 * Reads a form body (urlencoded or multipart) once; Hono keeps it for later
 * readers. A malformed one (a multipart type without a boundary, parts that
 * do not follow it) is a 400, never a 500.
 */
export async function readForm(
  c: Context,
): Promise<Record<string, string | File | (string | File)[]>> {
  try {
    return await c.req.parseBody();
  } catch (error) {
    if (error instanceof HttpError) throw error;
    throw new HttpError(400, "malformed form body");
  }
}

/** Reads a JSON body; malformed JSON is a 400, never a 500. */
export async function readJson(request: Request): Promise<unknown> {
  const type = request.headers.get("content-type") ?? "";
  if (!type.includes("application/json")) {
    throw new HttpError(415, "expected Content-Type: application/json");
  }
  const text = await request.text();
  if (text.length > 64 * 1024) {
    throw new HttpError(413, "request body over 64 KiB");
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, "malformed JSON body");
  }
}
