/**
 * The after-commit waker (lib/outbox/wake.ts): the in-process relay is woken
 * at every call; other processes get coalesced NOTIFYs, at least one after
 * every wake, never two of a service at the same time, each sent without
 * waiting for the WAL flush, and none for a service whose relay runs here;
 * an idle service is heard at once.
 */
import assert from "node:assert/strict";
import { withTestDatabase } from "./_db.ts";
import { connect } from "../../lib/db/connect.ts";
import { coalescingWaker } from "../../lib/outbox/wake.ts";
import { OUTBOX_CHANNEL } from "../../lib/outbox/channel.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("coalescingWaker: local relays are woken every time and get no NOTIFY; a burst for another process's relay is one NOTIFY", async () => {
  await withTestDatabase(async ({ sql, url }) => {
    const listener = connect(url, { max: 1 });
    const heard: string[] = [];
    try {
      await listener.listen(OUTBOX_CHANNEL, (payload) => heard.push(payload));
      const local: string[] = [];
      // This process runs a relay for orders and none for billing.
      const waker = coalescingWaker(sql, {
        local: { wake: (s) => local.push(s) > 0 && s === "orders" },
        windowMs: 20,
      });
      for (let i = 0; i < 50; i++) waker.wake("orders");
      for (let i = 0; i < 50; i++) waker.wake("billing");
      await waker.flush();
      await sleep(100);
      assert.equal(local.length, 100);
      // Orders' relay is here and has it; billing's runs elsewhere.
      assert.deepEqual(heard, ["billing"]);
    } finally {
      await listener.end();
    }
  });
});

Deno.test("coalescingWaker: a wake while its NOTIFY is on the way gets one more after it", async () => {
  await withTestDatabase(async ({ url }) => {
    const listener = connect(url, { max: 1 });
    const heard: string[] = [];
    try {
      await listener.listen(OUTBOX_CHANNEL, (payload) => heard.push(payload));
      // Holds the NOTIFY's connection until released: the wake below comes
      // while the first NOTIFY is on its way.
      const slow = connect(url, { max: 1 });
      let release = () => {};
      const held = slow.begin(async (tx) => {
        await tx`select 1`;
        await new Promise<void>((r) => release = r);
      });
      await sleep(50);
      const waker = coalescingWaker(slow, {
        windowMs: 1,
        onError: (e) => {
          throw e;
        },
      });
      waker.wake("orders");
      await sleep(30); // the window has passed: the NOTIFY waits for the connection
      waker.wake("orders");
      waker.wake("orders");
      release();
      await held;
      await waker.flush();
      await sleep(100);
      await slow.end();
      assert.equal(heard.length, 2, `NOTIFYs heard: ${heard.join(", ")}`);
    } finally {
      await listener.end();
    }
  });
});

Deno.test("coalescingWaker: the NOTIFY's synchronous_commit off ends with its statement", async () => {
  await withTestDatabase(async ({ url }) => {
    // One connection: the NOTIFY and the checks share the session.
    const one = connect(url, { max: 1 });
    const heard: string[] = [];
    try {
      await one.listen(OUTBOX_CHANNEL, (payload) => heard.push(payload));
      await one`set synchronous_commit = on`;
      const waker = coalescingWaker(one, { windowMs: 1 });
      waker.wake("orders");
      await waker.flush();
      const [after] =
        await one`select current_setting('synchronous_commit') as v`;
      assert.equal(after.v, "on");
      await sleep(100);
      assert.deepEqual(heard, ["orders"]);
    } finally {
      await one.end();
    }
  });
});

Deno.test("coalescingWaker: a quiet service's wake is heard at once; wakes within its window share one more at the window's end", async () => {
  await withTestDatabase(async ({ sql, url }) => {
    const listener = connect(url, { max: 1 });
    const heard: number[] = [];
    try {
      await listener.listen(OUTBOX_CHANNEL, () => heard.push(Date.now()));
      const waker = coalescingWaker(sql, { windowMs: 1_000 });
      const t0 = Date.now();
      waker.wake("orders");
      await sleep(300);
      // Heard long before the window ends.
      assert.equal(heard.length, 1);
      assert.ok(heard[0] - t0 < 300, `heard after ${heard[0] - t0} ms`);
      waker.wake("orders");
      waker.wake("orders");
      await waker.flush();
      await sleep(100);
      assert.equal(heard.length, 2);
      assert.ok(heard[1] - t0 >= 1_000, `heard after ${heard[1] - t0} ms`);
    } finally {
      await listener.end();
    }
  });
});
