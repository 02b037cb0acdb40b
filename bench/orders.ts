/**
 * Orders and payments for the load: a source of valid orders that never runs
 * into the day's capacity (one sandbox per client, one item per order,
 * cycling through products and the next 60 days, a new sandbox when those
 * are used up), and a paid order through the real services.
 */
import type { Sql } from "../lib/db/connect.ts";
import { serviceStatement } from "../lib/db/service.ts";
import { uuidv7 } from "../lib/outbox/envelope.ts";
import { MENU, menuItem } from "../services/menu.ts";
import { placeOrder } from "../services/orders/place.ts";
import type { PlaceOrderInput } from "../services/orders/schema.ts";
import { createPayment } from "../services/billing/open_payment.ts";
import { recordStripeEvent } from "../services/billing/payments.ts";

/** A day and a product with room for one more. */
export interface Slot {
  day: string;
  sku: string;
}

/** Days 0..59 from today (UTC): the window an order may name. */
export function* slots(): Generator<Slot> {
  const today = Date.UTC(
    new Date().getUTCFullYear(),
    new Date().getUTCMonth(),
    new Date().getUTCDate(),
  );
  const most = Math.max(...MENU.map((m) => m.dailyCapacity));
  for (let d = 0; d < 60; d++) {
    const day = new Date(today + d * 86_400_000).toISOString().slice(0, 10);
    for (let n = 0; n < most; n++) {
      for (const item of MENU) {
        if (n < item.dailyCapacity) yield { day, sku: item.sku };
      }
    }
  }
}

/** One item of `slot`'s product for its day, to be delivered. */
export function orderInput(
  slot: Slot,
  idempotencyKey: string,
): PlaceOrderInput {
  return {
    items: [{ sku: slot.sku, qty: 1 }],
    customer: { name: "Bench Customer", email: "bench@example.com" },
    fulfilment: "delivery",
    day: slot.day,
    idempotencyKey,
  };
}

/** Makes a sandbox row; returns its id. */
export async function newSandbox(sql: Sql, name: string): Promise<string> {
  const [row] = await sql<{ id: string }[]>`
    insert into platform.tenants (name) values (${name}) returning id`;
  return row.id;
}

/** Orders for one client: each fits the capacity of its day and product. */
export class OrderSource {
  #slots = slots();
  #sandboxId: string | undefined;
  #n = 0;

  constructor(readonly sql: Sql, readonly label: string) {}

  #lock: Promise<unknown> = Promise.resolve();

  /**
   * The sandbox the next order goes to, made now if there is none yet (to
   * switch its faults on before its first order).
   */
  sandbox(): Promise<string> {
    const result = this.#lock.then(async () =>
      this.#sandboxId ??= await newSandbox(this.sql, `bench ${this.label}`)
    );
    this.#lock = result.catch(() => {});
    return result;
  }

  /** The next order; calls are served one at a time. */
  next(): Promise<{ sandboxId: string; input: PlaceOrderInput }> {
    const result = this.#lock.then(() => this.#next());
    this.#lock = result.catch(() => {});
    return result;
  }

  async #next(): Promise<{ sandboxId: string; input: PlaceOrderInput }> {
    let slot = this.#slots.next();
    if (slot.done || !this.#sandboxId) {
      this.#sandboxId = await newSandbox(this.sql, `bench ${this.label}`);
      this.#slots = slots();
      slot = this.#slots.next();
    }
    this.#n++;
    return {
      sandboxId: this.#sandboxId,
      input: orderInput(slot.value as Slot, `bench-${this.label}-${this.#n}`),
    };
  }
}

/** Places one order through the orders service; returns its id and total. */
export async function place(sql: Sql, source: OrderSource) {
  const { sandboxId, input } = await source.next();
  const placed = await placeOrder(sql, sandboxId, input);
  return { sandboxId, orderId: placed.orderId, totalCents: placed.totalCents };
}

/**
 * The least an order could write: its order row alone, sent as the order is
 * (one round trip: BEGIN, the orders service's role and the sandbox, the
 * INSERT, COMMIT) under the sandbox's row-level security, with no
 * idempotency key, capacity, line, event, outbox row or wake-up. The write
 * scenario's floor: any order that keeps the sandboxes apart costs at least
 * this.
 */
export async function placeOrderRowOnly(sql: Sql, source: OrderSource) {
  const { sandboxId, input } = await source.next();
  await serviceStatement(sql, "orders", { tenantId: sandboxId }, (tx) =>
    tx.sql`
      insert into orders.orders (id, tenant_id, customer_name, customer_email,
                                 fulfilment, day, total_cents)
      values (${uuidv7()}, ${sandboxId}, ${input.customer.name},
              ${input.customer.email}, ${input.fulfilment}, ${input.day!},
              ${
      menuItem(input.items[0].sku)!.priceCents * input.items[0].qty
    })`);
}

let payments = 0;

/**
 * Pays an order as the test-mode gateway and the webhook do: a pending
 * payment, then the verified `payment_intent.succeeded` recorded by billing
 * (its commit is what the steady latency is measured from).
 */
export async function pay(
  sql: Sql,
  order: { sandboxId: string; orderId: string; totalCents: number },
) {
  const n = ++payments;
  const paymentId = `pi_bench_${Deno.pid}_${n}`;
  await createPayment(sql, order.sandboxId, {
    id: paymentId,
    orderId: order.orderId,
    amountCents: order.totalCents,
    cardLast4: "4242",
  });
  await recordStripeEvent(sql, {
    id: `evt_bench_${Deno.pid}_${n}`,
    type: "payment_intent.succeeded",
    data: {
      object: {
        id: paymentId,
        object: "payment_intent",
        amount: order.totalCents,
        currency: "eur",
        metadata: { sandboxId: order.sandboxId, orderId: order.orderId },
        last_payment_error: null,
      },
    },
  });
}
