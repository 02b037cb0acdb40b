/**
 * The pay request's COMMIT lands, but its answer is lost with the
 * connection: the request answers 503. The payment and the Stripe event that
 * settles it were committed together, so the event is sent all the same,
 * and paying again gets the same payment back instead of a second charge.
 *
 * A proxy between the app's pool and PostgreSQL cuts the one connection that
 * wrote the payment's event, at the moment PostgreSQL answers its COMMIT.
 */
import assert from "node:assert/strict";
import {
  countOf,
  orderSettles,
  placeOrderVia,
  signIn,
  withTestBakery,
} from "./_app.ts";
import { adminUrl } from "./_db.ts";

const encoder = new TextEncoder();

function includes(chunk: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= chunk.length; i++) {
    for (let j = 0; j < needle.length; j++) {
      if (chunk[i + j] !== needle[j]) continue outer;
    }
    return true;
  }
  return false;
}

/**
 * A TCP proxy to `target`. Once armed, the first connection that sends
 * `marker` loses its COMMIT's answer: the chunk carrying PostgreSQL's
 * "COMMIT" completion is not passed on, and both sockets are closed.
 */
function commitCutter(
  target: { hostname: string; port: number },
  marker: string,
) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const state = { armed: false, cuts: 0 };
  const needle = encoder.encode(marker);
  const commit = encoder.encode("COMMIT\0");
  const open = new Set<Deno.Conn>();
  const close = (c: Deno.Conn) => {
    open.delete(c);
    try {
      c.close();
    } catch {
      // closed already
    }
  };
  const serve = async (client: Deno.Conn) => {
    const server = await Deno.connect(target);
    open.add(client);
    open.add(server);
    let marked = false;
    const up = (async () => {
      for await (const chunk of client.readable) {
        if (state.armed && includes(chunk, needle)) marked = true;
        await server.write(chunk);
      }
    })().catch(() => {});
    const down = (async () => {
      for await (const chunk of server.readable) {
        if (marked && state.armed && includes(chunk, commit)) {
          state.armed = false;
          state.cuts++;
          break;
        }
        await client.write(chunk);
      }
    })().catch(() => {});
    await Promise.race([up, down]);
    close(client);
    close(server);
  };
  const accepting = (async () => {
    for await (const conn of listener) serve(conn).catch(() => close(conn));
  })().catch(() => {});
  return {
    state,
    port: (listener.addr as Deno.NetAddr).port,
    stop: async () => {
      listener.close();
      for (const c of [...open]) close(c);
      await accepting;
    },
  };
}

Deno.test("checkout: a pay request whose COMMIT answer is lost answers 503, and its order is paid once all the same", async () => {
  const server = new URL(adminUrl());
  const proxy = commitCutter(
    { hostname: server.hostname, port: Number(server.port) },
    // The pay request's own statement; the sender only reads and updates.
    "insert into billing.checkout_events",
  );
  const through = (url: string) => {
    const proxied = new URL(url);
    proxied.hostname = "127.0.0.1";
    proxied.port = String(proxy.port);
    return proxied.toString();
  };
  try {
    await withTestBakery(
      async (t) => {
        const client = t.client();
        await signIn(client, "Lost commit");
        const { orderId } = await placeOrderVia(client);
        proxy.state.armed = true;
        const lost = await client.json(
          "POST",
          `/api/orders/${orderId}/pay`,
          { card: "4242424242424242" },
        );
        assert.equal(proxy.state.cuts, 1, "the proxy cut no COMMIT");
        assert.equal(lost.status, 503, JSON.stringify(lost.body));

        // The COMMIT landed: the payment and its event are there.
        const billing = t.at("billing");
        const [payment] = await billing<{ id: string }[]>`
        select id from billing.payments where order_id = ${orderId}`;
        assert.ok(payment, "the payment was not committed");

        // Paying again finds that payment (or the order paid by now).
        const again = await client.json<{ paymentId?: string }>(
          "POST",
          `/api/orders/${orderId}/pay`,
          { card: "4242424242424242" },
        );
        if (again.status === 202) {
          assert.equal(again.body.paymentId, payment.id);
        } else assert.equal(again.status, 409, JSON.stringify(again.body));

        await orderSettles(client, orderId, "paid");
        assert.equal(
          await countOf(billing`select count(*)::int as n from billing.payments
                              where order_id = ${orderId}`),
          1,
        );
        assert.equal(
          await countOf(billing`select count(*)::int as n
                                from billing.stripe_events
                               where order_id = ${orderId}`),
          1,
        );
        const receipts = t.at("receipts");
        assert.equal(
          await countOf(receipts`select count(*)::int as n
                                 from receipts.receipts
                                where order_id = ${orderId}`),
          1,
        );
      },
      {},
      { through },
    );
  } finally {
    await proxy.stop();
  }
});
