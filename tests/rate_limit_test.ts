/**
 * kit/http/rate_limit.ts's window on a clock of our own: a key's minute
 * opens with its first request, a refused request counts against no key,
 * Retry-After counts down to the window's end, and ended windows are swept.
 */
import assert from "node:assert/strict";
import { RateLimiter } from "../kit/http/rate_limit.ts";

Deno.test("rate limiter: a fixed minute per key, opened by its first request", () => {
  let now = 1_000_000;
  const limiter = new RateLimiter(3, () => now);
  for (let i = 0; i < 3; i++) assert.equal(limiter.take(["a"]), 0);
  assert.equal(limiter.take(["a"]), 60);
  now += 59_001;
  assert.equal(limiter.take(["a"]), 1);
  now += 999;
  assert.equal(limiter.take(["a"]), 0, "a new minute");
});

Deno.test("rate limiter: a request counts against all its keys, or none", () => {
  let now = 0;
  const limiter = new RateLimiter(2, () => now);
  assert.equal(limiter.take(["session s", "address x"]), 0);
  assert.equal(limiter.take(["session s", "address x"]), 0);
  // The session is full: refused, and the new address is not charged.
  assert.equal(limiter.take(["session s", "address y"]), 60);
  now += 1_000;
  assert.equal(limiter.take(["session t", "address y"]), 0);
  assert.equal(limiter.take(["session u", "address y"]), 0);
  assert.equal(limiter.take(["session v", "address y"]), 59);
});

Deno.test("rate limiter: ended windows are swept once a minute", () => {
  let now = 0;
  const limiter = new RateLimiter(5, () => now);
  for (let i = 0; i < 100; i++) limiter.take([`address ${i}`]);
  assert.equal(limiter.size, 100);
  now += 60_000;
  limiter.take(["address new"]);
  assert.equal(limiter.size, 1);
});
