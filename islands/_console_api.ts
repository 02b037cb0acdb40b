/**
 * The console's writes: JSON with the session's CSRF token, which the page
 * prints in `<meta name="csrf-token">`. The server also accepts a same-site
 * Origin, but the token keeps working behind proxies that drop Origin.
 */

/** The token of `<meta name="csrf-token">`, if the page has one. */
export function csrfToken(): string | undefined {
  return document.querySelector<HTMLMetaElement>('meta[name="csrf-token"]')
    ?.content || undefined;
}

/** A JSON answer: its status and body (`{}` when the body is not JSON). */
export interface Answer {
  status: number;
  ok: boolean;
  // deno-lint-ignore no-explicit-any
  body: any;
}

/**
 * Sends `body` as JSON with `X-CSRF-Token` and reads the answer. A network
 * failure is an answer with status 0, so callers handle one shape.
 *
 * @example
 * ```ts
 * const answer = await sendJson("PUT", "/api/console/faults", { kitchenRefuses: true });
 * ```
 */
export async function sendJson(
  method: "POST" | "PUT",
  path: string,
  body: unknown = {},
): Promise<Answer> {
  const token = csrfToken();
  try {
    const response = await fetch(path, {
      method,
      headers: {
        "content-type": "application/json",
        accept: "application/json",
        ...(token ? { "x-csrf-token": token } : {}),
      },
      body: JSON.stringify(body),
    });
    return {
      status: response.status,
      ok: response.ok,
      body: await response.json().catch(() => ({})),
    };
  } catch {
    return { status: 0, ok: false, body: {} };
  }
}

/** What went wrong, in words, for a failed answer. */
export function failure(answer: Answer): string {
  if (answer.status === 0) return "The bakery cannot be reached.";
  if (typeof answer.body?.error === "string") return answer.body.error;
  return `The console answered ${answer.status}.`;
}
