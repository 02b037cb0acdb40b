/**
 * The console's wire contracts (services/console/contracts.ts) against the
 * running bakery: every GET route of the console's API has a schema, and
 * every answer of every twin parses against its schema (strict: no field
 * more, none less) with data in each shape the twins can take: kitchen
 * cards, dead letters, a refusal and a redrive, a refund due, and messages
 * the queue refuses to take, owed in an outbox with their error. The
 * answers of the operator's actions parse too. Every answer this test gets
 * is also checked against the OpenAPI document (tests/_openapi.ts), so the
 * document cannot drift from these contracts either.
 */
import assert from "node:assert/strict";
import Stripe from "stripe";
import type { z } from "zod";
import { createApp } from "../app.tsx";
import {
  type Client,
  deadLettersSettle,
  eventually,
  orderSettles,
  paymentIntentEvent,
  payVia,
  placeOrderVia,
  postWebhook,
  signIn,
  TEST_WEBHOOK_SECRET,
  testDeps,
  withTestBakery,
} from "./_app.ts";
import { assertAnswerDocumented } from "./_openapi.ts";
import {
  CLOSURE_STATES,
  CONSOLE_TWINS,
  type DeliveriesData,
  faultsDataSchema,
  redriveAnswerSchema,
  refuseAnswerSchema,
} from "../services/console/contracts.ts";
import { SUBSCRIBERS } from "../services/routing.ts";

type Route = keyof typeof CONSOLE_TWINS;

/** The console's JSON routes: its API, and the kitchen board's twin. */
const isConsoleApi = (path: string) =>
  path.startsWith("/api/console/") || path === "/api/kitchen/board";

/** Fails, naming the fields, unless `body` parses against `schema`. */
function assertParses(schema: z.ZodType, body: unknown, what: string) {
  const parsed = schema.safeParse(body);
  assert.ok(
    parsed.success,
    `${what} does not keep its contract: ${
      parsed.error?.issues.map((i) => `${i.path.join(".")}: ${i.message}`)
        .join("; ")
    }`,
  );
}

/**
 * GETs `path` (a concrete path of `route`), expects 200 and checks the body
 * against the route's schema; returns the body.
 */
async function twin<T = unknown>(
  client: Client,
  seen: Set<Route>,
  route: Route,
  path: string = route,
): Promise<T> {
  const { status, body } = await client.json<T>("GET", path);
  assert.equal(status, 200, `${path}: ${JSON.stringify(body)}`);
  assertParses(CONSOLE_TWINS[route], body, `GET ${path}`);
  seen.add(route);
  return body;
}

Deno.test("contracts: every GET route of the console's API has a schema", async () => {
  await withTestBakery((t) => {
    const routes = createApp(testDeps(t.sql)).routes
      .filter((r) => r.method === "GET" && isConsoleApi(r.path))
      .map((r) => r.path);
    assert.deepEqual(
      [...new Set(routes)].sort(),
      Object.keys(CONSOLE_TWINS).sort(),
      "a console twin without a schema, or a schema without its route",
    );
    return Promise.resolve();
  });
});

Deno.test("contracts: every console twin's answer parses against its schema, with data of every shape", async () => {
  await withTestBakery(async (t) => {
    const client = t.client({ checkAnswers: true });
    const { sandboxId } = await signIn(client, "Contracts");
    const seen = new Set<Route>();
    const setFaults = async (faults: Record<string, boolean>) => {
      const { status, body } = await client.json(
        "PUT",
        "/api/console/faults",
        faults,
      );
      assert.equal(status, 200, JSON.stringify(body));
      assertParses(faultsDataSchema, body, "PUT /api/console/faults");
    };

    // A paid order while the kitchen works: a confirmed card, a receipt.
    const paid = await placeOrderVia(client);
    await payVia(client, paid.orderId);
    await orderSettles(client, paid.orderId, "paid", 30_000);

    // Then the kitchen refuses: placed-and-cancelled and placed-and-paid
    // orders leave four dead letters.
    await setFaults({ kitchenRefuses: true });
    const cancelled = await placeOrderVia(client);
    const cancel = await client.json(
      "POST",
      `/api/orders/${cancelled.orderId}/cancel`,
    );
    assert.equal(cancel.status, 202);
    const later = await placeOrderVia(client);
    await payVia(client, later.orderId);
    const dead = await deadLettersSettle(client, 4, "", 30_000);

    // One refused, one redriven once the kitchen works again, one of the
    // rest refused by filter, through the bulk route.
    const refuse = await client.json(
      "POST",
      `/api/console/dead-letters/${dead[0].id}/refuse`,
      { reason: "Baked by hand" },
    );
    assert.equal(refuse.status, 200);
    assertParses(refuseAnswerSchema, refuse.body, "refusing one");
    await setFaults({ kitchenRefuses: false });
    const redrive = await client.json(
      "POST",
      `/api/console/dead-letters/${dead[1].id}/redrive`,
    );
    assert.equal(redrive.status, 202);
    assertParses(redriveAnswerSchema, redrive.body, "redriving one");
    const many = await client.json(
      "POST",
      "/api/console/dead-letters/refuse",
      { ids: [dead[2].id], reason: "Not needed" },
    );
    assert.equal(many.status, 200);
    assertParses(refuseAnswerSchema, many.body, "refusing by ids");
    const none = await client.json(
      "POST",
      "/api/console/dead-letters/redrive",
      { subscriber: "crm" },
    );
    assert.equal(none.status, 202);
    assertParses(redriveAnswerSchema, none.body, "redriving none");

    // Money taken for no payment that was opened: a refund due.
    const event = paymentIntentEvent({
      sandboxId,
      orderId: later.orderId,
      paymentId: "pi_test_never_opened",
      amountCents: later.totalCents,
    });
    const payload = JSON.stringify(event);
    const signature = await Stripe.webhooks.generateTestHeaderStringAsync({
      payload,
      secret: TEST_WEBHOOK_SECRET,
    });
    const stray = await postWebhook(t.url, payload, signature);
    assert.equal(stray.status, 200);
    assertAnswerDocumented("POST", "/webhooks/stripe", 200, stray.body);

    // The queue refuses the next order's messages: owed, with an error.
    await setFaults({ queueRefusesSends: true });
    await placeOrderVia(client);
    await eventually("a failed publish in the outbox", async () => {
      const { body } = await client.json<
        { oldest: { attempts: number }[] }
      >("GET", "/api/console/outbox");
      return body.oldest.some((r) => r.attempts > 0);
    }, 30_000);

    // Every twin, in every shape.
    const overview = await twin<
      { refunds: { total: number }; deadLetters: unknown[] }
    >(client, seen, "/api/console/overview");
    assert.equal(overview.refunds.total, 1);
    assert.ok(overview.deadLetters.length > 0);
    await twin(client, seen, "/api/console/outbox");
    const all = await twin<DeliveriesData>(
      client,
      seen,
      "/api/console/deliveries",
    );
    for (const state of Object.keys(all.counts)) {
      await twin(
        client,
        seen,
        "/api/console/deliveries",
        `/api/console/deliveries?state=${state}`,
      );
    }
    const states = new Set<string>();
    for (const d of all.items) {
      states.add(d.state);
      await twin(
        client,
        seen,
        "/api/console/deliveries/:id",
        `/api/console/deliveries/${d.id}`,
      );
    }
    assert.ok(states.has("done") && states.has("dead"), [...states].join());
    assert.ok(states.has("refused"), [...states].join());
    const deadNow = await twin<{ items: unknown[] }>(
      client,
      seen,
      "/api/console/dead-letters",
    );
    // The last of the four was never touched (the redriven one may be dead
    // again, by the order in which they died).
    assert.ok(deadNow.items.length >= 1);
    await twin(
      client,
      seen,
      "/api/console/dead-letters",
      "/api/console/dead-letters?subscriber=kitchen&eventType=OrderPaid",
    );
    await twin(client, seen, "/api/console/closure");
    let rows = 0;
    for (const subscriber of SUBSCRIBERS) {
      for (const state of CLOSURE_STATES) {
        const { items } = await twin<{ items: unknown[] }>(
          client,
          seen,
          "/api/console/closure/rows",
          `/api/console/closure/rows?subscriber=${subscriber}&state=${state}`,
        );
        rows += items.length;
      }
    }
    assert.ok(rows > 0);
    await twin(client, seen, "/api/console/faults");
    const receivers = await twin<{ receivers: { attempts: number }[] }>(
      client,
      seen,
      "/api/console/receivers",
    );
    assert.ok(receivers.receivers.some((r) => r.attempts > 0));
    // The test bakery runs its workers: this process beats, live.
    const workers = await twin<{ items: { state: string }[] }>(
      client,
      seen,
      "/api/console/workers",
    );
    assert.ok(workers.items.some((w) => w.state === "live"));
    const alerts = await twin<{ alerts: unknown[] }>(
      client,
      seen,
      "/api/console/alerts",
    );
    assert.ok(alerts.alerts.length > 0, "the dead letters raise an alert");
    const alertBoard = await twin<{ alerts: unknown[]; deadLetters: number }>(
      client,
      seen,
      "/api/console/alert-board",
    );
    assert.ok(alertBoard.alerts.length > 0 && alertBoard.deadLetters > 0);
    await twin(client, seen, "/api/console/order-violations");
    await twin(
      client,
      seen,
      "/api/console/order-violations",
      "/api/console/order-violations?subscriber=kitchen",
    );
    const groups = await twin<{ groups: unknown[] }>(
      client,
      seen,
      "/api/console/failure-groups",
    );
    assert.ok(groups.groups.length > 0);
    const log = await twin<{ items: unknown[] }>(
      client,
      seen,
      "/api/console/actions",
    );
    assert.ok(log.items.length > 0, "the redrive and refusal are logged");
    const found = await twin<{ results: unknown[] }>(
      client,
      seen,
      "/api/console/search",
      "/api/console/search?q=answered",
    );
    assert.ok(found.results.length > 0);
    // A job of this sandbox in orders' queue, as the job loop leaves a
    // finished one.
    const jobId = crypto.randomUUID();
    await t.at("orders")`
      insert into console.bulk_jobs (id, tenant_id, action, ids, total, done,
                                     changed, rate_per_second, actor, state,
                                     finished_at)
      values (${jobId}, ${sandboxId}, 'redrive', '{1,2}', 2, 2, 1, 50,
              'Contracts', 'done', now())`;
    await twin(
      client,
      seen,
      "/api/console/jobs/:jobId",
      `/api/console/jobs/${jobId}`,
    );
    // The redriven one: applied, dead again or retrying, as it went.
    const outcome = await twin<
      { applied: number; retrying: number; deadAgain: unknown[] }
    >(
      client,
      seen,
      "/api/console/redrive-outcome",
      `/api/console/redrive-outcome?ids=${dead[1].id}`,
    );
    assert.equal(
      outcome.applied + outcome.retrying + outcome.deadAgain.length,
      1,
    );
    const pause = await client.json("PUT", "/api/console/receivers/crm", {
      paused: true,
    });
    assert.equal(pause.status, 200);
    const paused = await twin<{ paused: boolean }>(
      client,
      seen,
      "/api/console/receivers/:name",
      "/api/console/receivers/crm",
    );
    assert.equal(paused.paused, true);
    const board = await twin<{ cards: unknown[] }>(
      client,
      seen,
      "/api/kitchen/board",
    );
    await twin(client, seen, "/api/console/checkout-events");
    assert.ok(board.cards.length > 0);

    assert.deepEqual(
      [...seen].sort(),
      Object.keys(CONSOLE_TWINS).sort(),
      "a twin that this test did not ask",
    );
  });
});
