/**
 * The test checkout's card checks, in the browser only: the server looks at
 * nothing but the card number (which test card it is), so these just catch
 * typing mistakes before anything is sent.
 */

/** The digits of a card number as typed, without spaces or dashes. */
export function cardDigits(typed: string): string {
  return typed.replace(/[\s-]/g, "");
}

/** `4242424242424242` as `4242 4242 4242 4242`, the way cards print it. */
export function groupCard(typed: string): string {
  const digits = cardDigits(typed);
  return /^\d+$/.test(digits)
    ? digits.replace(/(\d{4})(?=\d)/g, "$1 ")
    : typed.trim();
}

// The Luhn checksum that every card number carries: it catches one wrong
// digit and most swapped pairs.
function luhnOk(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

/** A message for a card number that cannot be right, or null. */
export function checkCard(typed: string): string | null {
  const digits = cardDigits(typed);
  if (!digits) return "Enter the card number.";
  if (!/^\d+$/.test(digits)) return "Use digits only.";
  // 12 to 19 digits: the shortest and longest card numbers issued.
  if (digits.length < 12 || digits.length > 19) {
    return "A card number has 12 to 19 digits.";
  }
  if (!luhnOk(digits)) return "That card number has a typo in it.";
  return null;
}

/**
 * A message for an expiry that is malformed or past, or null. Takes `MM/YY`
 * or `MM/YYYY`; a card is good through the last day of its month.
 */
export function checkExpiry(typed: string, now = new Date()): string | null {
  const match = /^\s*(\d{1,2})\s*\/\s*(\d{2}|\d{4})\s*$/.exec(typed);
  if (!match) return "Enter the expiry as MM/YY.";
  const month = Number(match[1]);
  const year = match[2].length === 2 ? 2000 + Number(match[2]) : +match[2];
  if (month < 1 || month > 12) return "The month is 01 to 12.";
  const current = now.getFullYear() * 12 + now.getMonth();
  if (year * 12 + (month - 1) < current) return "This card has expired.";
  return null;
}

/** A message for a CVC that is not 3 digits, or null. */
export function checkCvc(typed: string): string | null {
  return /^\d{3}$/.test(typed.trim())
    ? null
    : "The 3 digits on the back of the card.";
}

/**
 * An expiry as it is typed: digits only, with the slash put in after the
 * month, so `1230` reads `12/30`.
 */
export function formatExpiry(typed: string): string {
  const digits = typed.replace(/\D/g, "").slice(0, 4);
  return digits.length > 2
    ? `${digits.slice(0, 2)}/${digits.slice(2)}`
    : digits;
}
