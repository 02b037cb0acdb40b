/**
 * Parsing request input with zod: a failure is a 400 that names every field
 * that is wrong (`items.0.qty`), never a 500.
 */
import type { z } from "zod";
import { HttpError, type Issue } from "./errors.ts";

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
