/**
 * The core's schemas under names of the program's choosing
 * (lib/db/names.ts): lib/README.md's example, run on an empty database in
 * a child Deno that picked other names first, makes its tables there and
 * delivers through them, over the PostgreSQL queue and over JetStream. The
 * names belong to the process, so the child has them to itself.
 */
import assert from "node:assert/strict";
import { connect as natsConnect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "../../lib/db/connect.ts";
import { useSchemaNames } from "../../lib/db/names.ts";
import { emptyDatabase } from "./_db.ts";
import { dropStream, natsTest, TEST_NATS_URL, testStream } from "../_nats.ts";

const NAMES = new URL("../../lib/db/names.ts", import.meta.url).href;
const LOG = new URL("../../lib/log/mod.ts", import.meta.url).href;
const CONNECT = new URL("../../lib/db/connect.ts", import.meta.url).href;
const EXAMPLE = new URL("../../lib/examples/signup.ts", import.meta.url).href;
const QUEUE = new URL("../../lib/ledger/mod.ts", import.meta.url).href;
const FAULTS = new URL("../../lib/faults/mod.ts", import.meta.url).href;
const RETENTION =
  new URL("../../lib/ledger/retention.ts", import.meta.url).href;
const AUDIT = new URL("../../lib/ledger/audit.ts", import.meta.url).href;
const JETSTREAM =
  new URL("../../lib/carriers/jetstream/mod.ts", import.meta.url)
    .href;

/**
 * The example's carrier, as the child builds it: the PostgreSQL queue,
 * or JetStream on `stream` (with the queue's tables as its ledger).
 */
function carrierOf(stream?: string): string {
  if (!stream) return "undefined";
  return `(sql, routing) => jetStreamCarrier({
      stream: broker,
      ledger: new Ledger(sql, routing),
      routing,
      ackWaitMs: 10_000,
    })`;
}

/**
 * The example in a child Deno, under the core's schemas `names`, over the
 * PostgreSQL queue or, given a stream's name, over JetStream.
 */
async function exampleUnder(
  url: string,
  names: { platform: string; queue: string },
  stream?: string,
) {
  const program = `
    import { inPlatform, useSchemaNames } from ${JSON.stringify(NAMES)};
    import { createLogger } from ${JSON.stringify(LOG)};
    import { connect } from ${JSON.stringify(CONNECT)};
    import { failureGroups, pausedSubscribers, Ledger, setPaused }
      from ${JSON.stringify(QUEUE)};
    import { jetStreamCarrier, openJetStream, StreamNames }
      from ${JSON.stringify(JETSTREAM)};
    import { pruneHistory } from ${JSON.stringify(RETENTION)};
    import { auditOnce } from ${JSON.stringify(AUDIT)};
    import { pgFaults, setFault } from ${JSON.stringify(FAULTS)};
    useSchemaNames(${JSON.stringify(names)});
    const { setUp, signUp } = await import(${JSON.stringify(EXAMPLE)});
    const url = ${JSON.stringify(url)};
    const log = createLogger("warn", (line) => console.error(line));
    const sql = connect(url, { max: 2 });
    await setUp(sql, log);
    const [{ id }] = await sql\`
      insert into \${sql(inPlatform("tenants"))} (name)
      values ('example') returning id\`;
    await sql.end();
    const broker = ${
    stream
      ? `await openJetStream(${JSON.stringify(TEST_NATS_URL)}, {
          names: new StreamNames(${JSON.stringify(stream)}),
          subscribers: ["mailer"],
          duplicateWindowMs: 120_000,
          ackWaitMs: 10_000,
        }, log)`
      : "undefined"
  };
    const sent = await signUp(
      url, id, "grace@example.com", log, ${carrierOf(stream)});
    // The console's side of the core, under the same names.
    const pool = connect(url, { max: 2 });
    await setPaused(pool, id, "mailer", true, "test");
    const paused = await pausedSubscribers(pool, id);
    await setFault(pool, id, "slow", true);
    const faults = (await pgFaults(pool)([id])).get(id)?.size ?? 0;
    const groups = (await failureGroups(pool, id)).length;
    await pool\`grant usage on schema mailer to console\`;
    await pool\`grant select on mailer.inbox to console\`;
    // Until it has counted: a transaction still running elsewhere in the
    // cluster holds the audit back.
    for (let tries = 0; tries < 500; tries++) {
      await auditOnce({
        sql: pool,
        reader: "console",
        inboxOf: (s) => s + ".inbox",
        subscribers: ["mailer"],
      });
      const [counted] = await pool\`select count(*)::int as n from \${
        pool(${JSON.stringify(names.queue)} + ".closure_counts")}\`;
      if (counted.n > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const pruned = await pruneHistory(pool, {
      before: new Date(Date.now() + 60_000),
      subscribers: ["mailer"],
    });
    await pool.end();
    console.log(JSON.stringify({ sent, paused, faults, groups, pruned }));
  `;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", program],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, stderr);
  return JSON.parse(new TextDecoder().decode(out.stdout).trim());
}

/** Runs the example under other names, then checks what it made, and where. */
async function underOtherNames(stream?: string) {
  await emptyDatabase(async (url) => {
    const names = { platform: "msg_tenancy", queue: "msg_queue" };
    assert.deepEqual(await exampleUnder(url, names, stream), {
      sent: 1,
      paused: ["mailer"],
      faults: 1,
      groups: 0,
      pruned: {
        deliveries: 1,
        attempts: 0,
        messages: 1,
        inboxes: { mailer: 1 },
      },
    });

    const sql = connect(url, { max: 1 });
    try {
      const schemas = await sql<{ name: string }[]>`
        select nspname as name from pg_namespace
         where nspname in ('platform', 'queue', 'msg_tenancy', 'msg_queue')
         order by 1`;
      assert.deepEqual(schemas.map((s) => s.name), [
        "msg_queue",
        "msg_tenancy",
      ]);
      // The delivery was pruned by then; the tenant and its switches stay.
      const [{ deliveries, sandboxes, faults, pauses }] = await sql<
        {
          deliveries: number;
          sandboxes: number;
          faults: number;
          pauses: number;
        }[]
      >`
        select (select count(*)::int from msg_queue.deliveries) as deliveries,
               (select count(*)::int from msg_tenancy.tenants) as sandboxes,
               (select count(*)::int from msg_tenancy.faults) as faults,
               (select count(*)::int from msg_queue.pauses) as pauses`;
      assert.deepEqual(
        { deliveries, sandboxes, faults, pauses },
        { deliveries: 0, sandboxes: 1, faults: 1, pauses: 1 },
      );
      // The outboxes' trigger and the tenant policy call the core's
      // functions by their new schema.
      const [{ owed }] = await sql<{ owed: number }[]>`
        select count(*)::int as owed from accounts.outbox`;
      assert.equal(owed, 0);
    } finally {
      await sql.end();
    }
  });
}

Deno.test("the core runs under schema names of the program's choosing", () =>
  underOtherNames());

natsTest(
  "the core runs under schema names of the program's choosing, over JetStream",
  async () => {
    const stream = testStream();
    try {
      await underOtherNames(stream);
      // The message went through the broker, not around it.
      const nc = await natsConnect({ servers: TEST_NATS_URL });
      try {
        const info = await (await jetstreamManager(nc)).streams.info(stream);
        assert.equal(info.state.messages, 1);
      } finally {
        await nc.close();
      }
    } finally {
      await dropStream(stream);
    }
  },
);

Deno.test("schema names that are not plain identifiers are refused", () => {
  for (
    const names of [
      { queue: "Queue" },
      { queue: "my-queue" },
      { platform: "" },
      { platform: "a".repeat(64) },
      { platform: "queue" },
    ]
  ) {
    assert.throws(
      () => useSchemaNames(names),
      TypeError,
      JSON.stringify(names),
    );
  }
});
