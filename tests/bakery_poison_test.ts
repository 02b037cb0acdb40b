/**
 * A poison message through the bakery's own workers and receivers: a
 * payload that fails its schema is refused at once, recorded, and never
 * retried.
 */
import assert from "node:assert/strict";
import { asService } from "../lib/db/service.ts";
import { append, newEnvelope } from "../lib/outbox/mod.ts";
import {
  deadLettersSettle,
  placeOrderVia,
  signIn,
  withTestBakery,
} from "./_app.ts";

Deno.test("poison message: a PaymentSucceeded whose amount is not a number is dead at once at the orders service, 422 malformed, with a refusal row", async () => {
  await withTestBakery(async (t) => {
    const { sql } = t;
    const client = t.client();
    const { sandboxId } = await signIn(client);
    const { orderId, totalCents } = await placeOrderVia(client);
    const poison = newEnvelope({
      type: "PaymentSucceeded",
      aggregateId: orderId,
      aggregateVersion: 1,
      tenantId: sandboxId,
      payload: {
        paymentId: "pi_test_poison",
        orderId,
        amountCents: String(totalCents),
      },
    });
    await asService(
      sql,
      "billing",
      { tenantId: sandboxId },
      (tx) => append(tx, [poison]),
    );

    const reason =
      "malformed: amountCents: Invalid input: expected number, received string";
    const [dead] = await deadLettersSettle(client, 1);
    assert.deepEqual(
      [dead.messageId, dead.subscriber, dead.attempts, dead.lastStatus],
      [poison.messageId, "orders", 1, 422],
    );
    assert.equal(dead.lastError, `Orders answered 422: ${reason}`);
    const refusals = await t.at("orders")`
      select message_id, type, reason from orders.refusals`;
    assert.deepEqual([...refusals], [{
      message_id: poison.messageId,
      type: "PaymentSucceeded",
      reason,
    }]);
    const [order] = await t.at("orders")`
      select state, version from orders.orders where id = ${orderId}`;
    assert.deepEqual({ ...order }, { state: "placed", version: 1 });
  });
});
