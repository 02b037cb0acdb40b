/**
 * The walkthrough of the How it's built page, as a checklist computed from
 * the sandbox's rows (sessions, fault switches, orders, deliveries and their
 * attempts, the operators' actions, the kitchen's cards, the closure), never
 * from what the browser remembers. A step that the rows no longer show (the
 * fault switched on again, a new dead letter) is unticked again.
 *
 * The walkthrough order is the latest paid order whose kitchen deliveries of
 * OrderPlaced and OrderPaid both died answering 503 (OrderPaid held, not
 * dead, where the kitchen keeps each order's sequence): the later steps
 * are about that order's deliveries.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { readServices } from "../databases.ts";
import { closure } from "../console/closure.ts";

/** The steps, in the order a visitor does them. */
export const TRY_IT_STEPS = [
  "signedIn",
  "kitchenRefuses",
  "orderedAndPaid",
  "kitchenDead503",
  "faultOff",
  "paidFirst409",
  "redrivenInOrder",
  "oneConfirmedCard",
  "nothingOwed",
] as const;
export type TryItStep = typeof TRY_IT_STEPS[number];

/** One step: whether the rows show it done, and where to see it. */
export interface TryItItem {
  step: TryItStep;
  done: boolean;
  /** A console or storefront page where the rows behind it can be seen. */
  href: string;
}

/** The checklist, and the walkthrough order once there is one. */
export interface TryIt {
  steps: TryItItem[];
  orderId: string | null;
}

interface Walk {
  order_id: string;
  placed_id: string;
  paid_id: string;
  placed_state: string;
  paid_state: string;
  paid_redriven_at: Date | null;
  placed_redriven_at: Date | null;
  last_paid_redrive_at: Date | null;
  paid_dead_409: boolean;
  /** The kitchen kept the order's sequence: OrderPaid was held, not dead. */
  paid_held: boolean;
  card_state: string | null;
}

/**
 * The checklist of one sandbox.
 *
 * @example
 * ```ts
 * const { steps } = await tryIt(sql, sandboxId);
 * ```
 */
export async function tryIt(sql: Sql, sandboxId: string): Promise<TryIt> {
  // Sessions are the platform's: not a service's rows, read by the pool.
  const [session] = await sql<{ named: boolean }[]>`
    select exists (
      select from platform.sessions
       where tenant_id = ${sandboxId} and name is not null
         and ended_at is null) as named`;
  // The walk-through's rows are the orders service's and its queue's, in
  // one database in either mode; the switch is the console's and the card
  // the kitchen's, each read where it is.
  const facts = await readServices(
    sql,
    sandboxId,
    async (at, _, together) => {
      const [switched] = await at(
        "console",
        (sql) =>
          sql<{ refuses_now: boolean }[]>`
        select coalesce((select enabled from platform.faults
                          where name = 'kitchenRefuses'), false)
                 as refuses_now`,
      );
      const [f] = await at(
        "orders",
        (sql) =>
          sql<{ kitchen_503: boolean; paid_orders: boolean }[]>`
        select
          exists (select from queue.attempts a
                    join queue.deliveries d on d.id = a.delivery_id
                   where d.subscriber = 'kitchen' and a.status = 503)
            as kitchen_503,
          exists (select from orders.orders where state = 'paid')
            as paid_orders`,
      );
      const cardHere = together("orders", "kitchen");
      // Both kitchen deliveries of one paid order, each with an attempt that
      // died answering 503; the latest such order is the walkthrough's.
      const [walk] = await at("orders", (sql) =>
        sql<Walk[]>`
      with dead503 as (
        select d.aggregate_id, d.type, d.id, d.state
          from queue.deliveries d
         where d.subscriber = 'kitchen'
           and d.type in ('OrderPlaced', 'OrderPaid')
           and exists (select from queue.attempts a
                        where a.delivery_id = d.id and a.status = 503
                          and a.outcome in ('dead', 'held')))
      select o.id as order_id, pl.id::text as placed_id, pd.id::text as paid_id,
             pl.state as placed_state, pd.state as paid_state,
             (select min(at) from queue.actions
               where delivery_id = pd.id and action = 'redrive')
               as paid_redriven_at,
             (select min(at) from queue.actions
               where delivery_id = pl.id and action = 'redrive')
               as placed_redriven_at,
             (select max(at) from queue.actions
               where delivery_id = pd.id and action = 'redrive')
               as last_paid_redrive_at,
             exists (select from queue.attempts a
                      where a.delivery_id = pd.id and a.status = 409
                        and a.outcome = 'dead') as paid_dead_409,
             exists (select from queue.attempts a
                      where a.delivery_id = pd.id and a.outcome = 'held')
               as paid_held,
             ${
          cardHere
            ? sql`(select state from kitchen.cards c where c.order_id = o.id)`
            : sql`null::text`
        } as card_state
        from orders.orders o
        join dead503 pl on pl.aggregate_id = o.id::text
                       and pl.type = 'OrderPlaced'
        join dead503 pd on pd.aggregate_id = o.id::text
                       and pd.type = 'OrderPaid'
       where o.state = 'paid'
       order by o.created_at desc
       limit 1`);
      if (walk && !cardHere) {
        const [card] = await at("kitchen", (sql) =>
          sql<{ state: string }[]>`
          select state from kitchen.cards where order_id = ${walk.order_id}`);
        walk.card_state = card?.state ?? null;
      }
      return { ...switched, ...f, walk: walk as Walk | undefined };
    },
  );
  const walk = facts.walk;
  const kitchenDead503 = walk !== undefined;
  const faultOff = kitchenDead503 && !facts.refuses_now;
  // OrderPaid redriven before OrderPlaced was, and dead again with 409;
  // or, with "Kitchen keeps each order's sequence" on, held behind it.
  const paidFirst409 = !!walk?.paid_held ||
    !!walk?.paid_dead_409 && !!walk.paid_redriven_at &&
      (!walk.placed_redriven_at ||
        walk.paid_redriven_at < walk.placed_redriven_at);
  // OrderPlaced redriven, then OrderPaid again after it (or, held, let go
  // by itself once OrderPlaced was applied), and both done.
  const redrivenInOrder = !!walk?.placed_redriven_at &&
    (walk.paid_held || !!walk.last_paid_redrive_at &&
        walk.last_paid_redrive_at > walk.placed_redriven_at) &&
    walk.placed_state === "done" && walk.paid_state === "done";
  const oneConfirmedCard = redrivenInOrder && walk?.card_state === "confirmed";
  let nothingOwed = false;
  if (oneConfirmedCard) {
    const { totals } = await closure(sql, sandboxId);
    nothingOwed = totals.owed + totals.inFlight + totals.acceptedUnacked +
        totals.dead + totals.mismatch === 0;
  }
  const order = walk ? `/orders/${walk.order_id}` : "/";
  const done: Record<TryItStep, [boolean, string]> = {
    signedIn: [session.named, "/console"],
    kitchenRefuses: [facts.refuses_now || facts.kitchen_503, "/console/faults"],
    orderedAndPaid: [facts.paid_orders, order],
    kitchenDead503: [
      kitchenDead503,
      "/console/dead-letters?subscriber=kitchen",
    ],
    faultOff: [faultOff, "/console/faults"],
    paidFirst409: [
      paidFirst409,
      walk ? `/console/deliveries/${walk.paid_id}` : "/console/dead-letters",
    ],
    redrivenInOrder: [
      redrivenInOrder,
      walk ? `/console/deliveries/${walk.placed_id}` : "/console/dead-letters",
    ],
    oneConfirmedCard: [oneConfirmedCard, "/console/kitchen"],
    nothingOwed: [nothingOwed, "/console/closure"],
  };
  return {
    steps: TRY_IT_STEPS.map((step) => ({
      step,
      done: done[step][0],
      href: done[step][1],
    })),
    orderId: walk?.order_id ?? null,
  };
}

/** What each step asks the visitor to do, and how the rows show it. */
export const TRY_IT_WORDS: Record<TryItStep, { label: string; how: string }> = {
  signedIn: {
    label: "Sign in to the console",
    how: "a named session of this sandbox",
  },
  kitchenRefuses: {
    label: "Switch on “Kitchen refuses deliveries”",
    how: "the fault switch, or the kitchen's 503 answers it caused",
  },
  orderedAndPaid: {
    label: "Order and pay (test card 4242 4242 4242 4242)",
    how: "an order of this sandbox in state paid",
  },
  kitchenDead503: {
    label: "Watch the kitchen's two messages become dead letters",
    how:
      "OrderPlaced and OrderPaid to the kitchen, dead after “Kitchen answered 503”",
  },
  faultOff: {
    label: "Switch the fault off",
    how: "the kitchen's switch is off now",
  },
  paidFirst409: {
    label: "Redrive OrderPaid first: it comes back with 409",
    how:
      "a redrive of OrderPaid before OrderPlaced's, then an attempt dead with 409 (no card yet); with “Kitchen keeps each order's sequence” on, OrderPaid held behind OrderPlaced instead",
  },
  redrivenInOrder: {
    label: "Redrive OrderPlaced, then OrderPaid",
    how:
      "OrderPlaced redriven, OrderPaid redriven after it (or, held, following by itself), both delivered",
  },
  oneConfirmedCard: {
    label: "See one confirmed card on the kitchen board",
    how: "the order's one kitchen card, confirmed",
  },
  nothingOwed: {
    label: "See the closure with nothing owed",
    how: "no obligation owed, in flight, unacknowledged, dead or mismatched",
  },
};
