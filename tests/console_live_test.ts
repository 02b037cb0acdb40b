/**
 * The live change feed (`GET /api/events`, server-sent events): a change in
 * the stream's own sandbox arrives within seconds; a change in another
 * sandbox never does.
 */
import assert from "node:assert/strict";
import {
  type Client,
  eventually,
  orderSettles,
  placeOrderVia,
  signIn,
  startTestBakery,
  withTestBakery,
} from "./_app.ts";

interface SseEvent {
  event: string;
  data: unknown;
}

/** An open event stream, read in the background into `events`. */
class EventStream {
  readonly events: SseEvent[] = [];
  #abort = new AbortController();
  #reading: Promise<void> = Promise.resolve();
  #reader: ReadableStreamDefaultReader<Uint8Array> | undefined;

  static async open(client: Client, path = "/api/events") {
    const stream = new EventStream();
    const response = await client.fetch(path, {
      headers: { accept: "text/event-stream" },
      signal: stream.#abort.signal,
    });
    assert.equal(response.status, 200);
    assert.match(
      response.headers.get("content-type") ?? "",
      /^text\/event-stream/,
    );
    stream.#reading = stream.#read(response.body!);
    return stream;
  }

  async #read(body: ReadableStream<Uint8Array>) {
    const reader = this.#reader = body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      while (true) {
        const { done, value } = await reader.read();
        if (done || this.#abort.signal.aborted) return;
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const lines = block.split("\n");
          const event = lines.find((l) => l.startsWith("event: "));
          const data = lines.find((l) => l.startsWith("data: "));
          if (!event) continue;
          this.events.push({
            event: event.slice("event: ".length),
            data: data ? JSON.parse(data.slice("data: ".length)) : null,
          });
        }
      }
    } catch (error) {
      if (!this.#abort.signal.aborted) throw error;
    }
  }

  count(event: string): number {
    return this.events.filter((e) => e.event === event).length;
  }

  /**
   * Aborts the request and waits until the reader has stopped. The body is
   * cancelled too: an abort alone did not always end a pending read here
   * (it went on to return the next keep-alive comment).
   */
  async close() {
    this.#abort.abort();
    await this.#reader?.cancel().catch(() => {});
    await this.#reading;
  }
}

Deno.test("live: an order produces a change event in its own sandbox's stream, none in another's", async () => {
  const t = await startTestBakery();
  const streams: EventStream[] = [];
  try {
    const a = t.client();
    const b = t.client();
    const { sandboxId: sandboxA } = await signIn(a, "Operator A");
    const { sandboxId: sandboxB } = await signIn(b, "Operator B");

    const streamA = await EventStream.open(a);
    streams.push(streamA);
    const streamB = await EventStream.open(b);
    streams.push(streamB);
    await eventually("both streams to say hello", () =>
      Promise.resolve(
        streamA.count("hello") === 1 && streamB.count("hello") === 1,
      ), 5_000);
    assert.deepEqual(
      streamA.events.find((e) => e.event === "hello")!.data,
      { sandboxId: sandboxA },
    );

    // B's order: B's stream hears of it, A's does not.
    const { orderId: orderB } = await placeOrderVia(b);
    await orderSettles(b, orderB, "placed", 5_000);
    await eventually(
      "a change in B's stream",
      () => Promise.resolve(streamB.count("change") >= 1),
      5_000,
    );
    // A bounded wait for A: until a later change of B's (a console action,
    // coalesced for 200 ms) has reached B's stream, A's has heard nothing.
    const seen = streamB.count("change");
    const put = await b.json("PUT", "/api/console/faults", {
      kitchenSlow: false,
    });
    assert.equal(put.status, 200);
    await eventually(
      "B's stream to see the console action",
      () => Promise.resolve(streamB.count("change") > seen),
      5_000,
    );
    assert.equal(streamA.count("change"), 0, JSON.stringify(streamA.events));

    // A's order: A's stream hears of it within a few seconds.
    const { orderId: orderA } = await placeOrderVia(a);
    await eventually(
      "a change in A's stream",
      () => Promise.resolve(streamA.count("change") >= 1),
      5_000,
    );
    await orderSettles(a, orderA, "placed", 5_000);
    assert.ok(
      streamA.events.every((e) =>
        e.event !== "hello" ||
        (e.data as { sandboxId: string }).sandboxId === sandboxA
      ),
    );
    assert.ok(
      streamB.events.every((e) =>
        e.event !== "hello" ||
        (e.data as { sandboxId: string }).sandboxId === sandboxB
      ),
    );
  } finally {
    for (const s of streams) await s.close();
    await t.stop();
  }
});

Deno.test("live: the event stream needs a session", async () => {
  await withTestBakery(async (t) => {
    const response = await t.client().fetch("/api/events");
    assert.equal(response.status, 401);
    await response.body?.cancel();
  });
});
