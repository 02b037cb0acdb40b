/**
 * Parsing request input with zod: a failure is a 400 that names every field
 * that is wrong (`items.0.qty`), never a 500.
 */
import { z } from "zod";
import type { Context } from "hono";
import { HttpError, type Issue } from "./errors.ts";

const WELL_FORMED =
  "must be well-formed Unicode (a lone UTF-16 surrogate is not)";

/**
 * A string that PostgreSQL can store as it was sent: well-formed Unicode
 * and no NUL character. PostgreSQL's text (and jsonb's `\u0000`) refuses
 * U+0000 with an error (22021, 22P05), jsonb refuses a lone surrogate's
 * `\ud800` (22P02), and text stores a lone surrogate as U+FFFD while the
 * answer echoes the original; each surfaced as a 500, or as a row that is
 * not what was sent, after part of the work was done. Refused here, the 400
 * names the field like any other bad value. Every text field that comes
 * from outside and reaches the database starts with `text()`.
 *
 * @example
 * ```ts
 * const schema = z.object({ name: text().trim().min(1).max(80) });
 * schema.safeParse({ name: "A\u0000da" }).success; // false
 * schema.safeParse({ name: "A\ud800da" }).success; // false
 * ```
 */
export function text() {
  return z.string().refine((s) => s.isWellFormed(), {
    message: WELL_FORMED,
    abort: true,
  }).refine((s) => !s.includes("\u0000"), {
    message: "must not contain a NUL character",
  });
}

/** A step of a path, linked to its parent: no copy per level. */
type Step = { key: string; parent: Step | null } | null;

function pathOf(step: Step): string {
  const keys: string[] = [];
  for (let s = step; s; s = s.parent) keys.push(s.key);
  return keys.reverse().join(".");
}

/**
 * The path of the first string (a value or a key) in `value` that is not
 * well-formed Unicode, or null. JSON can carry a lone surrogate as an
 * escape (`"\ud800"`), and no schema field should have to remember to
 * refuse it. Walked without recursion and with linked paths, so that a
 * body nested 30,000 deep (64 KiB of `[`) neither overflows the stack nor
 * copies a path per level.
 */
export function illFormedPath(value: unknown): string | null {
  const stack: [unknown, Step][] = [[value, null]];
  while (stack.length > 0) {
    const [v, at] = stack.pop()!;
    if (typeof v === "string") {
      if (!v.isWellFormed()) return pathOf(at);
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) {
        stack.push([v[i], { key: String(i), parent: at }]);
      }
    } else if (v !== null && typeof v === "object") {
      for (const [key, item] of Object.entries(v).reverse()) {
        // The key is named as sent, made printable.
        const step = { key: key.toWellFormed(), parent: at };
        if (!key.isWellFormed()) return pathOf(step);
        stack.push([item, step]);
      }
    }
  }
  return null;
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

/**
 * Reads a JSON body; malformed JSON, or a string in it that is not
 * well-formed Unicode (named by its path), is a 400, never a 500.
 */
export async function readJson(request: Request): Promise<unknown> {
  const type = request.headers.get("content-type") ?? "";
  if (!type.includes("application/json")) {
    throw new HttpError(415, "expected Content-Type: application/json");
  }
  const text = await request.text();
  if (text.length > 64 * 1024) {
    throw new HttpError(413, "request body over 64 KiB");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new HttpError(400, "malformed JSON body");
  }
  // One rule for every JSON body, whatever its schema: well-formed text.
  const path = illFormedPath(value);
  if (path !== null) {
    throw new HttpError(
      400,
      `invalid request body: ${path || "(root)"}: ${WELL_FORMED}`,
      [{ path, message: WELL_FORMED }],
    );
  }
  return value;
}
