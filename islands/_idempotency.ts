/**
 * The idempotency key of a checkout. One key per basket: it is kept in
 * sessionStorage, so a double click, a resubmit after a network error, a
 * reload or the back button all send the same key and the server answers
 * with the order it already has. A different basket is a different checkout
 * and gets a new key.
 */

const STORAGE_KEY = "outbox-bakery:checkout-key:v1";

/**
 * Returns the key for a checkout of `basket` (any string that identifies the
 * basket's contents), creating and saving one the first time.
 */
export function checkoutKey(basket: string): string {
  try {
    const saved = JSON.parse(sessionStorage.getItem(STORAGE_KEY) ?? "null");
    if (saved?.basket === basket && typeof saved.key === "string") {
      return saved.key;
    }
  } catch {
    // Unreadable storage: fall through to a new key.
  }
  const key = randomKey();
  try {
    sessionStorage.setItem(STORAGE_KEY, JSON.stringify({ key, basket }));
  } catch {
    // Without storage the key still holds for this page's resubmits.
  }
  return key;
}

/** Forgets the key once its order is placed, so the next checkout is new. */
export function forgetCheckoutKey(): void {
  try {
    sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // Nothing to forget.
  }
}

// 128 random bits. getRandomValues, unlike randomUUID, also works on plain
// http pages that are not localhost (not a "secure context").
function randomKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
