/**
 * The basket, shared by every island on the page through module-level
 * signals (one client bundle, so one copy of this module). It is kept in
 * localStorage so that it survives a reload, and follows other tabs.
 *
 * On the server the basket is always empty: storage exists only in the
 * browser, and it is read after hydration (`startCart` in an effect), so the
 * first client render matches the server's HTML.
 */
import { computed, effect, signal } from "@preact/signals";

/** What an island needs to know about a menu item. */
export interface CatalogItem {
  sku: string;
  name: string;
  priceCents: number;
}

/** One line of the basket. */
export interface CartLine {
  sku: string;
  qty: number;
}

/** The most of one item in a basket; a bigger order is a phone call. */
export const MAX_QTY = 24;

const STORAGE_KEY = "outbox-bakery:cart:v1";

/** Quantities by sku, in the order items were first added. */
export const cart = signal<Record<string, number>>({});

/** False until the basket has been read from storage. */
export const cartReady = signal(false);

/** The number of items in the basket. */
export const cartCount = computed(() =>
  Object.values(cart.value).reduce((sum, qty) => sum + qty, 0)
);

/** Sets the quantity of one item; zero or less removes it. */
export function setQty(sku: string, qty: number): void {
  const next = { ...cart.value };
  if (qty <= 0) delete next[sku];
  else next[sku] = Math.min(Math.floor(qty), MAX_QTY);
  cart.value = next;
}

/** Adds one of an item. */
export function addOne(sku: string): void {
  setQty(sku, (cart.value[sku] ?? 0) + 1);
}

/** Empties the basket (after an order is placed). */
export function clearCart(): void {
  cart.value = {};
}

/** The basket's lines for the given menu; unknown skus are left out. */
export function cartLines(menu: readonly CatalogItem[]): CartLine[] {
  const known = new Set(menu.map((item) => item.sku));
  return Object.entries(cart.value)
    .filter(([sku]) => known.has(sku))
    .map(([sku, qty]) => ({ sku, qty }));
}

/** The basket's total in cents for the given menu. */
export function cartTotalCents(menu: readonly CatalogItem[]): number {
  const price = new Map(menu.map((item) => [item.sku, item.priceCents]));
  return cartLines(menu).reduce(
    (sum, line) => sum + line.qty * (price.get(line.sku) ?? 0),
    0,
  );
}

let started = false;

/**
 * Reads the basket from storage and keeps it saved from then on. Call it
 * from an effect of every island that shows the basket; only the first call
 * does anything.
 */
export function startCart(): void {
  if (started || typeof localStorage === "undefined") return;
  started = true;
  cart.value = readStored();
  cartReady.value = true;
  effect(() => writeStored(cart.value));
  // Another tab changed the basket. Writing the same value back does not
  // fire the event again, so two tabs cannot bounce it between them.
  addEventListener("storage", (event) => {
    if (event.key === STORAGE_KEY) cart.value = readStored();
  });
  // A page restored from the back-forward cache kept its old signals.
  addEventListener("pageshow", (event) => {
    if (event.persisted) cart.value = readStored();
  });
}

function readStored(): Record<string, number> {
  try {
    const raw: unknown = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? "{}");
    const clean: Record<string, number> = {};
    if (raw && typeof raw === "object" && !Array.isArray(raw)) {
      // Storage is user-editable: keep only sane lines.
      for (const [sku, qty] of Object.entries(raw)) {
        if (Number.isInteger(qty) && qty > 0) {
          clean[sku] = Math.min(qty, MAX_QTY);
        }
      }
    }
    return clean;
  } catch {
    return {};
  }
}

function writeStored(value: Record<string, number>): void {
  try {
    localStorage.setItem(STORAGE_KEY, JSON.stringify(value));
  } catch {
    // Private browsing or a full quota: the basket still works in this page.
  }
}
