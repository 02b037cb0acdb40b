/**
 * The shapes of the console's JSON twins, as the islands read them. Types
 * only: they come from the read models in services/console/, and `import
 * type` keeps the database code out of the browser bundle.
 */
import type { OutboxAges } from "../services/console/outbox.ts";
import type {
  deadLettersBySubscriber,
  deliveryDetail,
  DeliveryItem,
  receiverHealth,
} from "../services/console/deliveries.ts";
import type {
  ClosureCounts,
  closureRows,
  ClosureState,
} from "../services/console/closure.ts";
import type { kitchenBoard } from "../services/console/board.ts";
import type { RefundDue } from "../services/console/refunds.ts";

export type { ClosureCounts, ClosureState, DeliveryItem, OutboxAges };

/** `GET /api/console/closure`. */
export interface ClosureData {
  totals: ClosureCounts;
  bySubscriber: Record<string, ClosureCounts>;
}

/** `GET /api/console/overview`. */
export interface OverviewData {
  outbox: OutboxAges;
  closure: ClosureData;
  deadLetters: Awaited<ReturnType<typeof deadLettersBySubscriber>>;
  receivers: Awaited<ReturnType<typeof receiverHealth>>;
  /** Payments needing a refund: newest first, and how many in all. */
  refunds: { total: number; items: RefundDue[] };
}

/** `GET /api/console/deliveries?state=`. */
export interface DeliveriesData {
  counts: Record<string, number>;
  items: DeliveryItem[];
}

/** `GET /api/console/deliveries/:id`. */
export type DeliveryDetailData = NonNullable<
  Awaited<ReturnType<typeof deliveryDetail>>
>;

/** `GET /api/console/dead-letters`. */
export interface DeadLettersData {
  items: DeliveryItem[];
}

/** `GET /api/console/closure/rows`. */
export interface ClosureRowsData {
  items: Awaited<ReturnType<typeof closureRows>>;
}

/** `GET /api/kitchen/board`. */
export interface BoardData {
  cards: Awaited<ReturnType<typeof kitchenBoard>>;
}

/** One kitchen card. */
export type KitchenCard = BoardData["cards"][number];

export type { JobView } from "../services/console/jobs.ts";
export type { FailureGroup } from "../lib/queue/mod.ts";
