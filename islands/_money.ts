/**
 * Money on screen. Written out by hand rather than with Intl so that the
 * server and every browser print the same characters, which hydration needs.
 */

/**
 * Formats integer cents as euros.
 *
 * @example
 * ```ts
 * formatEuros(1234); // "€12.34"
 * ```
 */
export function formatEuros(cents: number): string {
  const sign = cents < 0 ? "−" : "";
  const abs = Math.abs(Math.round(cents));
  const euros = Math.floor(abs / 100).toString()
    .replace(/\B(?=(\d{3})+$)/g, ",");
  return `${sign}€${euros}.${String(abs % 100).padStart(2, "0")}`;
}
