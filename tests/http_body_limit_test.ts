/**
 * Body limits come before reading: a body over its route's limit is a 413,
 * decided from Content-Length before a byte of the body is read, or, for a
 * chunked body, as soon as the stream passes the limit. A 300 MB upload
 * leaves the process's memory flat. The requests go over a raw TCP
 * connection, so that the client can send headers without the body, or keep
 * streaming after the server has answered.
 */
import assert from "node:assert/strict";
import { rowCounts, withTestBakery } from "./_app.ts";

const MB = 1024 * 1024;

interface RawAnswer {
  status: number;
  /** Body bytes the client had written when the answer's head arrived. */
  sentBeforeAnswer: number;
  body: string;
}

/**
 * Sends `head` (request line and header lines, each ending in CRLF, without
 * the blank line that ends them), then
 * `total` bytes in 64 KiB pieces (or `total` itself when it is a string),
 * chunked unless Content-Length is among the headers. Stops writing once the server answers or closes; gives
 * up after 20 s (today's code read the whole body before answering).
 */
async function rawRequest(
  base: string,
  head: string,
  total: number | string,
): Promise<RawAnswer> {
  const url = new URL(base);
  const conn = await Deno.connect({
    hostname: url.hostname,
    port: Number(url.port),
  });
  const chunked = !/content-length:/i.test(head);
  // A number: that many bytes, in 64 KiB pieces; a string: that body.
  const piece = new TextEncoder().encode(
    typeof total === "string" ? total : "a".repeat(64 * 1024),
  );
  const length = typeof total === "string" ? piece.length : total;
  let sent = 0;
  let sentBeforeAnswer = -1;
  let closed = false;
  const close = () => {
    if (!closed) conn.close();
    closed = true;
  };
  const timer = setTimeout(close, 20_000);
  const reading = (async () => {
    const decoder = new TextDecoder();
    let text = "";
    const buffer = new Uint8Array(16 * 1024);
    while (true) {
      const n = await conn.read(buffer).catch(() => null);
      if (n === null) break;
      if (sentBeforeAnswer < 0) sentBeforeAnswer = sent;
      text += decoder.decode(buffer.subarray(0, n), { stream: true });
      const end = text.indexOf("\r\n\r\n");
      const length = /content-length:\s*(\d+)/i.exec(text)?.[1];
      if (end >= 0 && length && text.length >= end + 4 + Number(length)) {
        break;
      }
    }
    // Closing here also ends a write that the server no longer reads.
    close();
    return text;
  })();
  const encoder = new TextEncoder();
  // write() may take part of a buffer; a chunk must go out whole.
  const write = async (bytes: Uint8Array) => {
    for (let at = 0; at < bytes.length;) {
      at += await conn.write(bytes.subarray(at));
    }
  };
  try {
    await write(encoder.encode(
      `${head}${chunked ? "transfer-encoding: chunked\r\n" : ""}\r\n`,
    ));
    while (sent < length && sentBeforeAnswer < 0) {
      if (chunked) {
        await write(encoder.encode(`${piece.length.toString(16)}\r\n`));
      }
      await write(piece);
      if (chunked) await write(encoder.encode("\r\n"));
      sent += piece.length;
    }
    if (chunked && sentBeforeAnswer < 0) {
      await write(encoder.encode("0\r\n\r\n"));
    }
  } catch {
    // The server closed the connection after answering: what we expect.
  }
  const text = await reading;
  clearTimeout(timer);
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
  const body = text.slice(text.indexOf("\r\n\r\n") + 4);
  return { status, sentBeforeAnswer, body };
}

const headers = (method: string, path: string, base: string, extra: string) =>
  `${method} ${path} HTTP/1.1\r\nhost: ${new URL(base).host}\r\n` +
  `origin: ${new URL(base).origin}\r\n${extra}`;

Deno.test("body limits: Content-Length over the route's limit is a 413 before the body is sent", async () => {
  await withTestBakery(async (t) => {
    const before = await rowCounts(t.sql);
    const cases: [string, string, string, number][] = [
      ["POST", "/api/orders", "application/json", 300 * MB],
      ["POST", "/api/session", "application/json", 65 * 1024],
      ["POST", "/sign-in", "application/x-www-form-urlencoded", 17 * 1024],
      ["POST", "/no/such/path", "multipart/form-data; boundary=x", 300 * MB],
      ["PUT", "/api/console/faults", "application/json", 300 * MB],
      ["POST", "/webhooks/stripe", "application/json", 257 * 1024],
    ];
    for (const [method, path, type, length] of cases) {
      // Headers only: the client sends no body at all.
      const answer = await rawRequest(
        t.url,
        headers(
          method,
          path,
          t.url,
          `content-type: ${type}\r\ncontent-length: ${length}\r\n`,
        ),
        0,
      );
      assert.equal(answer.status, 413, `${method} ${path}: ${answer.body}`);
      assert.match(JSON.parse(answer.body).error, /over \d+ KiB/);
    }
    assert.deepEqual(await rowCounts(t.sql), before);

    // Under the webhook's own limit (256 KiB), the signature decides: 400.
    const payload = JSON.stringify({ pad: "x".repeat(200 * 1024) });
    const webhook = await fetch(new URL("/webhooks/stripe", t.url), {
      method: "POST",
      headers: { "content-type": "application/json", "stripe-signature": "x" },
      body: payload,
    });
    assert.equal(webhook.status, 400);
    assert.match((await webhook.json()).error, /signature/);
  });
});

Deno.test("body limits: a 300 MB chunked upload is a 413 at once and leaves memory flat", async () => {
  await withTestBakery(async (t) => {
    const before = await rowCounts(t.sql);
    const targets: [string, string][] = [
      ["/api/orders", "application/json"],
      ["/no/such/path", "multipart/form-data; boundary=x"],
      ["/webhooks/stripe", "application/json"],
    ];
    // Warm up: the first request compiles what later ones reuse.
    await rawRequest(t.url, headers("POST", "/api/orders", t.url, ""), 1024);
    const rss = () => {
      (globalThis as { gc?: () => void }).gc?.();
      return Deno.memoryUsage().rss;
    };
    const start = rss();
    for (const [path, type] of targets) {
      const answer = await rawRequest(
        t.url,
        headers("POST", path, t.url, `content-type: ${type}\r\n`),
        300 * MB,
      );
      assert.equal(answer.status, 413, `${path}: ${answer.body}`);
      const grown = (rss() - start) / MB;
      assert.ok(grown < 50, `${path}: RSS grew by ${grown.toFixed(1)} MB`);
      // The answer came while the client was still sending.
      assert.ok(
        answer.sentBeforeAnswer >= 0 && answer.sentBeforeAnswer < 300 * MB,
        `${path}: answered after ${answer.sentBeforeAnswer} bytes`,
      );
    }
    assert.deepEqual(await rowCounts(t.sql), before);

    // A chunked body under the limit still works: signing in.
    const small = await rawRequest(
      t.url,
      headers(
        "POST",
        "/api/session",
        t.url,
        "content-type: application/json\r\n",
      ),
      JSON.stringify({ name: "Chunked" }),
    );
    assert.equal(small.status, 201, small.body);
  });
});
