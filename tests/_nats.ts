/**
 * NATS for the JetStream tests: TEST_NATS_URL, which `deno task test` sets to
 * a nats-server of its own (tests/run.ts); without it, 127.0.0.1:4222. When none answers, the tests that need it are
 * registered as ignored and the reason is printed once, so the run's summary
 * counts them as skipped instead of failing or passing them.
 */
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";

export const TEST_NATS_URL = Deno.env.get("TEST_NATS_URL") ??
  "nats://127.0.0.1:4222";

async function probe(): Promise<string | null> {
  try {
    const nc = await connect({ servers: TEST_NATS_URL, timeout: 2000 });
    try {
      await (await jetstreamManager(nc)).getAccountInfo();
      return null;
    } finally {
      await nc.close();
    }
  } catch (error) {
    return `no JetStream at ${TEST_NATS_URL}: ${(error as Error).message}`;
  }
}

/** Why the JetStream tests cannot run here, or null when they can. */
export const natsMissing: string | null = await probe();
if (natsMissing) console.log(`skipped: ${natsMissing}`);

/** A stream name of its own for one test, in this run. */
export function testStream(): string {
  return `TEST_${Deno.env.get("TEST_RUN_ID") ?? Deno.pid}_${
    crypto.randomUUID().slice(0, 8)
  }`;
}

/** Deletes a test's stream (and its consumers); fine if it is gone. */
export async function dropStream(name: string): Promise<void> {
  const nc = await connect({ servers: TEST_NATS_URL });
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete(name).catch(() => false);
  } finally {
    await nc.close();
  }
}

/** `Deno.test` for a test that needs JetStream: ignored without it. */
export function natsTest(name: string, fn: () => Promise<void>) {
  Deno.test({ name, ignore: natsMissing !== null, fn });
}

/**
 * Runs `fn` with the settings of a bakery over the run's JetStream, on a
 * stream of its own, dropped afterwards.
 */
export async function withJetStream<T>(
  fn: (env: Record<string, string>) => Promise<T>,
): Promise<T> {
  const stream = testStream();
  try {
    return await fn({
      QUEUE: "jetstream",
      NATS_URL: TEST_NATS_URL,
      NATS_STREAM: stream,
    });
  } finally {
    await dropStream(stream);
  }
}
