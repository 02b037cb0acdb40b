/**
 * The consumer's judgement of an answer (the table in lib/delivery/classify.ts)
 * and its retry delays. Pure functions: no database.
 */
import assert from "node:assert/strict";
import {
  classify,
  type Outcome,
  retryDelay,
} from "../../lib/delivery/classify.ts";

const answered = (status: number, reason = ""): Outcome => ({
  kind: "answered",
  status,
  reason,
});

Deno.test("classify: every 2xx is done, on any attempt, with no error", () => {
  for (const status of [200, 201, 202, 204, 299]) {
    for (const attempt of [1, 4]) {
      assert.deepEqual(
        classify(answered(status), "Kitchen", 5000, attempt, 4),
        {
          state: "done",
          error: null,
        },
      );
    }
  }
});

Deno.test("classify: a 2xx that says why it applied nothing is done, and its words are kept", () => {
  assert.deepEqual(
    classify(
      answered(200, "already applied: kitchen has message M7 in its inbox"),
      "Kitchen",
      5000,
      1,
      4,
    ),
    {
      state: "done",
      error:
        "Kitchen answered 200: already applied: kitchen has message M7 in its inbox",
    },
  );
});

Deno.test("classify: 409, 429, 5xx, timeout, network errors and lost answers retry until the last attempt", () => {
  const retryable: [Outcome, string][] = [
    [answered(409, "no card yet"), "Kitchen answered 409: no card yet"],
    [answered(429), "Kitchen answered 429"],
    [answered(500, "boom"), "Kitchen answered 500: boom"],
    [answered(503), "Kitchen answered 503"],
    [answered(599), "Kitchen answered 599"],
    [{ kind: "timeout" }, "Kitchen timed out after 5000 ms"],
    [
      { kind: "network", message: "connection refused" },
      "Kitchen could not be reached: connection refused",
    ],
    [
      { kind: "lost", status: 200, reason: "connection reset" },
      "acknowledgement lost after Kitchen answered (connection reset)",
    ],
  ];
  for (const [outcome, error] of retryable) {
    for (const attempt of [1, 2, 3]) {
      assert.deepEqual(
        classify(outcome, "Kitchen", 5000, attempt, 4),
        { state: "pending", error },
        `attempt ${attempt} of ${JSON.stringify(outcome)}`,
      );
    }
    assert.deepEqual(
      classify(outcome, "Kitchen", 5000, 4, 4),
      { state: "dead", error },
      `last attempt of ${JSON.stringify(outcome)}`,
    );
    // A redriven delivery past its original limit dies again at once.
    assert.equal(classify(outcome, "Kitchen", 5000, 5, 4).state, "dead");
  }
});

Deno.test("classify: 422 is dead at once, with the receiver's reason", () => {
  assert.deepEqual(
    classify(answered(422, "a card exists already"), "Kitchen", 5000, 1, 4),
    { state: "dead", error: "Kitchen answered 422: a card exists already" },
  );
});

Deno.test("classify: other 4xx cannot succeed as sent and are dead at once", () => {
  for (const status of [400, 401, 403, 404, 410, 413]) {
    const judged = classify(answered(status), "Kitchen", 5000, 1, 4);
    assert.equal(judged.state, "dead", `status ${status}`);
    assert.equal(judged.error, `Kitchen answered ${status}`);
  }
});

Deno.test("classify: 1xx and 3xx are not successes", () => {
  for (const status of [101, 301, 304]) {
    const judged = classify(answered(status), "Kitchen", 5000, 1, 4);
    assert.equal(judged.state, "dead", `status ${status}`);
    assert.equal(judged.error, `Kitchen answered ${status}`);
  }
});

Deno.test("classify: a single-attempt delivery is dead on its first retryable failure", () => {
  assert.equal(classify(answered(503), "Kitchen", 5000, 1, 1).state, "dead");
  assert.equal(
    classify({ kind: "timeout" }, "Kitchen", 5000, 1, 1).state,
    "dead",
  );
});

Deno.test("retryDelay: retry n waits delays[n-1] plus at most 10 % jitter", () => {
  const delays = [1000, 5000, 25000];
  for (let i = 0; i < 200; i++) {
    for (const [attempt, base] of [[1, 1000], [2, 5000], [3, 25000]]) {
      const d = retryDelay(delays, attempt);
      assert.ok(d >= base && d <= base * 1.1, `retry ${attempt} waited ${d}`);
      assert.equal(d, Math.round(d));
    }
  }
});

Deno.test("retryDelay: past the list the last delay repeats; an empty list waits 0", () => {
  for (let i = 0; i < 50; i++) {
    const d = retryDelay([100, 200], 5);
    assert.ok(d >= 200 && d <= 220, `waited ${d}`);
  }
  assert.equal(retryDelay([], 1), 0);
  assert.equal(retryDelay([0, 0], 2), 0);
});

Deno.test("retryDelay: the jitter varies, so retries of a burst spread out", () => {
  const seen = new Set<number>();
  for (let i = 0; i < 100; i++) seen.add(retryDelay([10_000], 1));
  assert.ok(seen.size > 1, "every delay was the same");
});
