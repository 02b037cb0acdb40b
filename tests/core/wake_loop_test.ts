/**
 * The worker loop's idle state, which the consumers' wake-ups read: a loop
 * is idle only while it sleeps, not while it ticks, and not once woken.
 */
import assert from "node:assert/strict";
import { memoryLogger } from "../../lib/log/mod.ts";
import { Loop } from "../../lib/wake/loop.ts";

const settle = (ms = 20) => new Promise((r) => setTimeout(r, ms));

/** A loop whose ticks can be held; counts them. */
function heldLoop(pollMs: number) {
  const { logger } = memoryLogger("error");
  const state = {
    ticks: 0,
    held: undefined as Promise<void> | undefined,
    release: () => {},
  };
  const loop = new Loop({
    name: "test",
    log: logger,
    pollMs,
    tick: async () => {
      state.ticks++;
      if (state.held) await state.held;
      return { more: false };
    },
  });
  const hold = () => state.held = new Promise((r) => state.release = r);
  const free = () => {
    state.held = undefined;
    state.release();
  };
  return { loop, state, hold, free };
}

Deno.test("loop: idle while sleeping, not while ticking or once woken", async () => {
  const { loop, state, hold, free } = heldLoop(60_000);
  assert.equal(loop.idle, false);
  loop.start();
  await settle();
  assert.equal(state.ticks, 1);
  assert.equal(loop.idle, true);
  hold();
  loop.wake();
  assert.equal(loop.idle, false, "woken");
  await settle();
  assert.equal(state.ticks, 2);
  assert.equal(loop.idle, false, "ticking");
  free();
  await settle();
  assert.equal(loop.idle, true);
  await loop.stop();
  assert.equal(loop.idle, false);
});

Deno.test("loop: a sleep ended by the poll's timer leaves no wake handle behind", async () => {
  const { loop, state, hold, free } = heldLoop(10);
  loop.start();
  await settle();
  // The next tick comes from the timer; hold it and look while it runs.
  hold();
  const before = state.ticks;
  while (state.ticks === before) await settle(5);
  assert.equal(loop.idle, false, "ticking after a timed sleep");
  free();
  await loop.stop();
});
