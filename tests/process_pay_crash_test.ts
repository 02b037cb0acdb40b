/**
 * A payment accepted is a payment settled, whatever happens to the program
 * right after: ten times, the whole group (the app and its PostgreSQL) is
 * killed as soon as the pay request answers 202, and once it is stopped
 * cleanly with SIGINT instead. Each order ends paid by itself after the
 * next start, with one receipt and one confirmed kitchen card, because the
 * Stripe event that settles it was committed with the payment
 * (billing.checkout_events), not held in memory.
 */
import assert from "node:assert/strict";
import { freePort } from "../kit/postgres/embedded.ts";
import {
  Client,
  type OrderJson,
  orderSettles,
  payVia,
  placeOrderVia,
  signIn,
} from "./_app.ts";
import {
  killAll,
  type Main,
  startMain,
  stopWithin,
  waitHealthy,
} from "./_main.ts";

const ROUNDS = 10;

Deno.test("process: kill -9 right after each pay answers 202, then start again: every order ends paid once", async () => {
  const dir = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "bakery-pay-crash-" }),
  );
  const port = await freePort();
  const env = {
    DATA_DIR: dir,
    PORT: String(port),
    DATABASE_URL: "",
    LOG_LEVEL: "warn",
    POLL_INTERVAL_MS: "500",
    SANDBOX_WIPE: "off",
    // The delivery retries are the product's own: a delivery that the kill
    // left leased is taken over after its lease (20 s), and an OrderPaid
    // that reached the kitchen before its OrderPlaced must outlast that.
  };
  let main: Main = startMain(env, { ownGroup: true });
  const orders: string[] = [];
  try {
    await waitHealthy(main, port);
    const client = new Client(`http://127.0.0.1:${port}/`);
    await signIn(client, "Power cuts");
    for (let round = 1; round <= ROUNDS + 1; round++) {
      const { orderId } = await placeOrderVia(client);
      await payVia(client, orderId);
      orders.push(orderId);
      if (round <= ROUNDS) {
        Deno.kill(-main.child.pid, "SIGKILL");
        assert.equal((await main.child.status).signal, "SIGKILL");
        await main.stdoutDone;
      } else {
        // The last round stops cleanly: the event must outlive that too.
        const stopped = await stopWithin(main, "SIGINT", 20_000);
        assert.equal(stopped?.code, 0, await main.stderr);
      }
      main = startMain(env, { ownGroup: true });
      await waitHealthy(main, port);
    }
    for (const orderId of orders) {
      const order: OrderJson = await orderSettles(
        client,
        orderId,
        "paid",
        60_000,
      );
      assert.equal(
        order.events.filter((e) => e.type === "OrderPaid").length,
        1,
        orderId,
      );
      assert.equal(order.kitchenCard?.state, "confirmed", orderId);
      const receipts = order.deliveries.filter((d) =>
        d.subscriber === "receipts" && d.eventType === "OrderPaid"
      );
      assert.equal(receipts.length, 1, orderId);
      assert.equal(receipts[0].state, "done", orderId);
    }
  } finally {
    await killAll(main, `${dir}/pg`);
    await Deno.remove(dir, { recursive: true });
  }
});
