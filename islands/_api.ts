/**
 * What the storefront's islands need to call the JSON API: the session's
 * CSRF token from the page, and a JSON POST that carries it.
 */

/** The token that the page printed in `<meta name="csrf-token">`, if any. */
export function csrfToken(): string | undefined {
  return document.querySelector<HTMLMetaElement>('meta[name="csrf-token"]')
    ?.content || undefined;
}

/** A JSON answer: its status and its parsed body (`{}` when not JSON). */
export interface JsonAnswer {
  status: number;
  // deno-lint-ignore no-explicit-any
  body: any;
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
): Promise<JsonAnswer> {
  const token = csrfToken();
  const response = await fetch(path, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json",
      ...(token ? { "x-csrf-token": token } : {}),
    },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    body: await response.json().catch(() => ({})),
  };
}
