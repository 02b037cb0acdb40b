/**
 * What the storefront's islands need to call the JSON API: the session's
 * CSRF token from the page, and a JSON POST that carries it.
 */

/** The token that the page printed in `<meta name="csrf-token">`, if any. */
export function csrfToken(): string | undefined {
  return document.querySelector<HTMLMetaElement>('meta[name="csrf-token"]')
    ?.content || undefined;
}

/** A JSON answer: its status and body (`{}` when the body is not JSON). */
export interface Answer {
  /** 0 when the bakery could not be reached. */
  status: number;
  ok: boolean;
  // deno-lint-ignore no-explicit-any
  body: any;
}

/** The storefront's name for an answer. */
export type JsonAnswer = Answer;

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

/**
 * POSTs `body` as JSON with `X-CSRF-Token`, and reads the JSON answer.
 * Rejects only when the bakery could not be reached.
 *
 * @example
 * ```ts
 * const { status } = await postJson(`/api/orders/${id}/cancel`);
 * ```
 */
export async function postJson(
  path: string,
  body: unknown = {},
): Promise<Answer> {
  const answer = await sendJson("POST", path, body);
  if (answer.status === 0) throw new Error("the bakery could not be reached");
  return answer;
}
