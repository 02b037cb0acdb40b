/**
 * The console's writes: JSON with the session's CSRF token, which the page
 * prints in `<meta name="csrf-token">`. The server also accepts a same-site
 * Origin, but the token keeps working behind proxies that drop Origin.
 */

import type { Answer } from "./_api.ts";

export { type Answer, csrfToken, sendJson } from "./_api.ts";

/** What went wrong, in words, for a failed answer. */
export function failure(answer: Answer): string {
  if (answer.status === 0) return "The bakery cannot be reached.";
  if (typeof answer.body?.error === "string") return answer.body.error;
  return `The console answered ${answer.status}.`;
}
