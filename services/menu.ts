/**
 * The menu: what the bakery sells, at what price, and how many of each it can
 * bake in a day. Orders read prices from here (never from the browser), and
 * the schedule reads the daily capacity. No HTTP here.
 */

/** One thing on the menu. */
export interface MenuItem {
  /** Stable identifier, used in orders and messages. */
  sku: string;
  name: string;
  /** Price of one, in euro cents. */
  priceCents: number;
  description: string;
  /** How many the kitchen can bake for one day. */
  dailyCapacity: number;
  /** A small drawing, as SVG markup (trusted: it is written here). */
  icon: string;
}

// Shared colours keep the six drawings looking like one set.
const INK = "#4a2e18";
const CRUST = "#c98a4b";
const CRUMB = "#f3d9a8";

function svg(body: string): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" ` +
    `width="64" height="64" aria-hidden="true" focusable="false" ` +
    `stroke-linecap="round" stroke-linejoin="round">${body}</svg>`;
}

function dots(points: [number, number][], r: number, fill: string): string {
  const circles = points.map(([x, y]) =>
    `<circle cx="${x}" cy="${y}" r="${r}"/>`
  );
  return `<g fill="${fill}">${circles.join("")}</g>`;
}

/** Small tilted ovals (almond flakes, seeds) at `[x, y, degrees]`. */
function flakes(
  at: [number, number, number][],
  size: [number, number],
  paint: string,
): string {
  return at.map(([x, y, deg]) =>
    `<ellipse cx="${x}" cy="${y}" rx="${size[0]}" ry="${size[1]}" ` +
    `transform="rotate(${deg} ${x} ${y})" ${paint}/>`
  ).join("");
}

const cardamomBun = svg(
  `<circle cx="32" cy="33" r="23" fill="#d79c5c" stroke="${INK}" stroke-width="2.5"/>` +
    // A spiral of half circles with alternating centres: the rolled dough.
    `<path d="M29 33a3 3 0 0 1 6 0a6 6 0 0 1-12 0a9 9 0 0 1 18 0a12 12 0 0 1-24 0a15 15 0 0 1 30 0" ` +
    `fill="none" stroke="#8a5227" stroke-width="2.5"/>` +
    dots(
      [[20, 20], [41, 17], [49, 30], [45, 46], [26, 50], [15, 38]],
      1.8,
      "#fffaf0",
    ) +
    dots([[30, 22], [38, 40], [22, 33]], 1.2, "#6f8a3c"),
);

const countryLoaf = svg(
  `<path d="M7 45C7 25 19 14 32 14S57 25 57 45c0 4-3 6-7 6H14c-4 0-7-2-7-6z" ` +
    `fill="${CRUST}" stroke="${INK}" stroke-width="2.5"/>` +
    // The score opens into an "ear", the mark of a well-risen loaf.
    `<path d="M17 36c6-9 20-14 31-9" fill="none" stroke="${CRUMB}" stroke-width="4"/>` +
    `<path d="M17 36c6-9 20-14 31-9" fill="none" stroke="#8a5227" stroke-width="1.2"/>` +
    dots([[24, 22], [38, 19], [46, 38], [20, 44], [33, 44]], 1.1, "#fbf3e2"),
);

const ryeSourdough = svg(
  `<ellipse cx="32" cy="33" rx="27" ry="15" transform="rotate(-12 32 33)" ` +
    `fill="#8c5a34" stroke="${INK}" stroke-width="2.5"/>` +
    `<path d="M15 40l8-13M27 41l8-14M39 38l8-14" stroke="${CRUMB}" stroke-width="3"/>` +
    dots([[20, 30], [33, 24], [45, 40], [28, 44]], 1.1, "#e9d6b8"),
);

const cinnamonKnot = svg(
  // The same loop three times: dark outline, dough, then a dashed stripe of
  // cinnamon that makes it read as twisted.
  ["#4a2e18:11", "#d9a064:7.5", "#7b3f1d:2:2.5 4"].map((spec) => {
    const [color, width, dash] = spec.split(":");
    return `<path d="M13 38c-3-13 12-21 19-8s21 5 19-8-18-4-19 8-9 26-19 8z" ` +
      `fill="none" stroke="${color}" stroke-width="${width}"` +
      (dash ? ` stroke-dasharray="${dash}"` : "") + `/>`;
  }).join(""),
);

const almondCroissant = svg(
  `<path d="M5 44c3-13 10-20 18-22 6-5 12-6 18 0 8 2 15 9 18 22-5-4-11-5-16-2-4-3-15-3-19 0-5-3-14-2-19 2z" ` +
    `fill="${CRUST}" stroke="${INK}" stroke-width="2.5"/>` +
    `<path d="M23 22l3 17M32 18v19M41 22l-3 17M14 31l8 10M50 31l-8 10" ` +
    `fill="none" stroke="#8a5227" stroke-width="1.6"/>` +
    flakes(
      [[25, 27, -30], [33, 24, 10], [40, 29, 40], [30, 31, -60]],
      [3.4, 1.7],
      `fill="#f6e6c4" stroke="#b78450" stroke-width=".8"`,
    ),
);

const seededCrispbread = svg(
  `<g transform="rotate(-8 32 32)">` +
    `<rect x="9" y="15" width="46" height="34" rx="5" fill="#c39260" stroke="${INK}" stroke-width="2.5"/>` +
    // Docking holes in rows, as the rolling pin leaves them.
    dots(
      [16, 24, 32, 40, 48].flatMap((x) =>
        [23, 32, 41].map((y): [number, number] => [x, y])
      ),
      1.4,
      "#7a4d2a",
    ) +
    flakes(
      [[21, 28, 30], [30, 37, -20], [39, 26, 60], [46, 36, 10], [26, 44, 80]],
      [2, 1],
      `fill="#f5e9cf"`,
    ) +
    `</g>`,
);

/** Everything on the menu, in the order the storefront shows it. */
export const MENU: readonly MenuItem[] = Object.freeze([
  {
    sku: "cardamom-bun",
    name: "Cardamom bun",
    priceCents: 350,
    description:
      "Rolled and knotted, with freshly ground cardamom and pearl sugar.",
    dailyCapacity: 60,
    icon: cardamomBun,
  },
  {
    sku: "country-loaf",
    name: "Country loaf",
    priceCents: 650,
    description:
      "Our everyday sourdough: wheat and a little rye, a dark blistered crust.",
    dailyCapacity: 24,
    icon: countryLoaf,
  },
  {
    sku: "rye-sourdough",
    name: "Rye sourdough",
    priceCents: 720,
    description: "Dense and tangy, 80 % whole rye, fermented overnight.",
    dailyCapacity: 18,
    icon: ryeSourdough,
  },
  {
    sku: "cinnamon-knot",
    name: "Cinnamon knot",
    priceCents: 380,
    description: "Buttery dough twisted around cinnamon and brown sugar.",
    dailyCapacity: 48,
    icon: cinnamonKnot,
  },
  {
    sku: "almond-croissant",
    name: "Almond croissant",
    priceCents: 420,
    description: "Twice baked with frangipane and toasted flaked almonds.",
    dailyCapacity: 36,
    icon: almondCroissant,
  },
  {
    sku: "seeded-rye-crispbread",
    name: "Seeded rye crispbread",
    priceCents: 590,
    description:
      "A pack of thin, crackling rye sheets with sunflower and sesame.",
    dailyCapacity: 30,
    icon: seededCrispbread,
  },
]);

const bySku = new Map(MENU.map((item) => [item.sku, item]));

/**
 * Finds a menu item by its sku, or `undefined` when there is none.
 *
 * @example
 * ```ts
 * menuItem("cardamom-bun")?.priceCents; // 350
 * ```
 */
export function menuItem(sku: string): MenuItem | undefined {
  return bySku.get(sku);
}

/** The public part of a menu item: what a price list shows. */
export type PriceListItem = Pick<MenuItem, "sku" | "name" | "priceCents">;

/**
 * The menu as a price list (sku, name, price), the shape that `GET /api/menu`
 * answers and that browser code receives.
 */
export function priceList(): PriceListItem[] {
  return MENU.map(({ sku, name, priceCents }) => ({ sku, name, priceCents }));
}
