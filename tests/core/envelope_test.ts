/** The envelope format and its UUIDv7 message ids. Pure: no database. */
import assert from "node:assert/strict";
import {
  type Envelope,
  envelopeSchema,
  newEnvelope,
  tenantOf,
  uuidv7,
} from "../../lib/outbox/envelope.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

Deno.test("uuidv7: lower-case UUID, version nibble 7, RFC 9562 variant", () => {
  for (let i = 0; i < 500; i++) {
    const id = uuidv7();
    assert.match(id, UUID);
    assert.equal(id[14], "7", `version of ${id}`);
    assert.ok("89ab".includes(id[19]), `variant of ${id}`);
  }
});

Deno.test("uuidv7: the first 48 bits are the milliseconds, big-endian", () => {
  const ms = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
  const id = uuidv7(ms);
  const hex = id.replaceAll("-", "").slice(0, 12);
  assert.equal(parseInt(hex, 16), ms);
  assert.equal(uuidv7(0).slice(0, 13), "00000000-0000");
  // The largest 48-bit time still fits.
  assert.equal(uuidv7(2 ** 48 - 1).slice(0, 13), "ffffffff-ffff");
});

Deno.test("uuidv7: ids sort by time across milliseconds", () => {
  const start = Date.UTC(2026, 5, 1);
  const ids: string[] = [];
  for (let i = 0; i < 300; i++) {
    // Crosses byte boundaries (255 -> 256 ms) on the way.
    ids.push(uuidv7(start + i));
  }
  const sorted = [...ids].sort();
  assert.deepEqual(sorted, ids);
  // Far apart too: a later millisecond always sorts after, whatever the
  // random bits.
  for (let i = 0; i < 100; i++) {
    assert.ok(uuidv7(start + 86_400_000) > uuidv7(start));
  }
});

Deno.test("uuidv7: with the real clock, an id made in a later millisecond sorts after", async () => {
  for (let i = 0; i < 5; i++) {
    const before = uuidv7();
    const ms = Date.now();
    while (Date.now() <= ms) await new Promise((r) => setTimeout(r, 1));
    const after = uuidv7();
    assert.ok(after > before, `${after} sorts before ${before}`);
  }
});

Deno.test("uuidv7: ids of one millisecond are distinct", () => {
  const ms = Date.now();
  const ids = new Set(Array.from({ length: 1000 }, () => uuidv7(ms)));
  assert.equal(ids.size, 1000);
});

function valid(): Envelope {
  return newEnvelope({
    type: "OrderPlaced",
    aggregateId: "O1",
    aggregateVersion: 1,
    tenantId: "0190f3c2-8c1e-7a3b-9d2e-4f5a6b7c8d9e",
    payload: { orderId: "O1" },
  });
}

Deno.test("envelopeSchema: a new envelope is valid and parses to itself", () => {
  const e = valid();
  assert.deepEqual(envelopeSchema.parse(e), e);
  assert.equal(e.schemaVersion, 1);
  assert.match(e.messageId, UUID);
  assert.ok(!Number.isNaN(Date.parse(e.occurredAt)));
});

Deno.test("envelopeSchema: rejects extra keys", () => {
  const result = envelopeSchema.safeParse({ ...valid(), extra: true });
  assert.equal(result.success, false);
  assert.equal(result.error!.issues[0].code, "unrecognized_keys");
});

Deno.test("envelopeSchema: rejects a bad or upper-case uuid", () => {
  const e = valid();
  for (
    const messageId of [
      "not-a-uuid",
      "",
      e.messageId.toUpperCase(),
      e.messageId.slice(0, -1),
      `${e.messageId}0`,
      e.messageId.replaceAll("-", ""),
    ]
  ) {
    const result = envelopeSchema.safeParse({ ...e, messageId });
    assert.equal(result.success, false, messageId);
    assert.deepEqual(result.error!.issues[0].path, ["messageId"]);
  }
  const bad = envelopeSchema.safeParse({ ...e, tenantId: "x" });
  assert.equal(bad.success, false);
  assert.deepEqual(bad.error!.issues[0].path, ["tenantId"]);
});

// Messages stored before version 2 name the tenant sandboxId; receivers
// still get them, byte for byte, and must read them.
Deno.test("envelopeSchema: reads a version 1 envelope as version 2", () => {
  const { tenantId, ...rest } = valid();
  const v1 = { ...rest, sandboxId: tenantId };
  assert.deepEqual(envelopeSchema.parse(v1), { ...rest, tenantId });
  assert.equal(tenantOf(v1 as unknown as Envelope), tenantId);
  // Both names at once is neither version.
  const both = envelopeSchema.safeParse({ ...v1, tenantId });
  assert.equal(both.success, false);
  const bad = envelopeSchema.safeParse({ ...rest, sandboxId: "x" });
  assert.deepEqual(bad.error!.issues[0].path, ["tenantId"]);
});

Deno.test("envelopeSchema: rejects missing fields and malformed values", () => {
  const e = valid();
  const cases: [string, unknown][] = [
    ["type", "orderPlaced"],
    ["type", "Order-Placed"],
    ["schemaVersion", 0],
    ["schemaVersion", 1.5],
    ["aggregateId", ""],
    ["aggregateVersion", 0],
    ["occurredAt", "yesterday"],
    ["payload", "a string"],
    ["payload", null],
  ];
  for (const [key, value] of cases) {
    const result = envelopeSchema.safeParse({ ...e, [key]: value });
    assert.equal(result.success, false, `${key} = ${JSON.stringify(value)}`);
    assert.deepEqual(result.error!.issues[0].path[0], key);
  }
  for (const key of Object.keys(e)) {
    const partial: Record<string, unknown> = { ...e };
    delete partial[key];
    assert.equal(envelopeSchema.safeParse(partial).success, false, key);
  }
});

Deno.test("envelopeSchema: a copy names the message ids it supersedes, never itself", () => {
  const e = valid();
  const line = [uuidv7(), uuidv7()];
  assert.deepEqual(
    envelopeSchema.parse({ ...e, supersedes: line }).supersedes,
    line,
  );
  const cases: [string, unknown][] = [
    ["empty", []],
    ["not a list", line[0]],
    ["a bad uuid", ["not-a-uuid"]],
    ["itself", [line[0], e.messageId]],
    ["too long a line", Array.from({ length: 21 }, () => uuidv7())],
  ];
  for (const [what, supersedes] of cases) {
    const result = envelopeSchema.safeParse({ ...e, supersedes });
    assert.equal(result.success, false, what);
    assert.equal(result.error!.issues[0].path[0], "supersedes", what);
  }
});
