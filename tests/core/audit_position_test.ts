/**
 * The closure audit's positions (lib/ledger/audit.ts): each subscriber's
 * done deliveries are counted once, in the order their finishes got a
 * transaction id, and never past a finish that has not committed yet: one
 * that commits later would turn up behind the position and never be
 * counted.
 */
import assert from "node:assert/strict";
import type { Sql } from "../../lib/db/connect.ts";
import { auditOnce, uncounted } from "../../lib/ledger/audit.ts";
import { asService } from "../../lib/db/service.ts";
import { finishDeliveries } from "../../lib/ledger/deliveries_sql.ts";
import type {
  AttemptResult,
  ClaimedDelivery,
} from "../../lib/ledger/delivery.ts";
import { Ledger } from "../../lib/ledger/mod.ts";
import { PgMove } from "../../lib/carriers/mod.ts";
import { withTestDatabase } from "./_db.ts";
import {
  claimDeliveries,
  createSandbox,
  createTestServices,
  placeOrders,
  RECEIVERS,
  ROUTING,
  SENDER,
  waitFor,
} from "./_messaging.ts";

/** Deliveries counted so far, closed or not (none has an inbox row). */
async function countedSoFar(sql: Sql): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select coalesce(sum(closed + mismatch), 0)::int as n
      from queue.closure_counts`;
  return row.n;
}

/** A claimed delivery's result once its receiver answered 200. */
function answered(d: ClaimedDelivery): AttemptResult {
  return {
    id: d.id,
    lease: d.lease,
    state: "done",
    attempt: d.attempt,
    status: 200,
    error: null,
    delayMs: 0,
    startedAt: new Date(),
    durationMs: 1,
  };
}

Deno.test("the audit counts a finish that commits late once, not behind its position", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenant = await createSandbox(sql, "audited");
    await placeOrders(sql, tenant, ["o-1", "o-2"]);
    await new PgMove(new Ledger(sql, ROUTING)).move(SENDER, 100);
    const claimed = await claimDeliveries(sql, "consumer-1", 100, 60_000);
    assert.equal(claimed.length, 2 * RECEIVERS.length);
    const [late, ...rest] = claimed;
    for (const r of RECEIVERS) {
      await sql`grant usage on schema ${sql(r)} to console`;
      await sql`grant select on ${sql(r + ".inbox")} to console`;
    }
    const audit = {
      sql,
      reader: "console",
      inboxOf: (s: string) => `${s}.inbox`,
      subscribers: RECEIVERS,
    };

    // One finish begins and stays open; the others commit after it.
    let updated!: () => void;
    const begun = new Promise<void>((resolve) => updated = resolve);
    let commit!: () => void;
    const release = new Promise<void>((resolve) => commit = resolve);
    const open = sql.begin(async (tx) => {
      await tx`
        update queue.deliveries
           set state = 'done', done_at = now(), done_xid = pg_current_xact_id(),
               lease_owner = null, lease_expires_at = null
         where id = ${late.id}`;
      updated();
      await release;
    });
    try {
      await begun;
      const finished = await finishDeliveries(
        sql,
        rest.map(answered),
      );
      assert.equal(finished, rest.length);

      // The open finish is older than the committed ones: nothing past it is
      // counted while it may still commit.
      assert.deepEqual(await auditOnce(audit), { more: false });
      assert.equal(await countedSoFar(sql), 0);
    } finally {
      commit();
      await open;
    }
    // A transaction still running anywhere in the cluster (another test's)
    // holds the audit back too: looked at again until it has counted all.
    await waitFor("the audit to count every delivery", async () => {
      await auditOnce(audit);
      return await countedSoFar(sql) >= claimed.length;
    });
    assert.equal(await countedSoFar(sql), claimed.length);
    // Each once: a mismatch row each (no inbox has them), and nothing left.
    const [mismatches] = await sql<{ n: number }[]>`
      select count(distinct delivery_id)::int as n from queue.mismatches`;
    assert.equal(mismatches.n, claimed.length);
    assert.deepEqual(await auditOnce(audit), { more: false });
    assert.equal(await countedSoFar(sql), claimed.length);
  }, { max: 4 });
});

Deno.test("what is not counted yet is read through the index under row-level security", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const tenant = await createSandbox(sql, "history");
    const subscriber = RECEIVERS[0];
    // History as the audit leaves it: 5,000 done deliveries, all counted.
    await sql`
      insert into queue.deliveries
        (tenant_id, message_id, subscriber, type, aggregate_id, state,
         attempts, done_at, done_xid)
      select ${tenant}, gen_random_uuid(), ${subscriber}, 'OrderPlaced',
             'o-' || g, 'done', 1, now(), '0'::xid8
        from generate_series(1, 5000) g`;
    await sql`
      insert into queue.audit_positions (subscriber, done_xid, id)
      select ${subscriber}, '0', max(id) from queue.deliveries`;
    await sql`vacuum analyze queue.deliveries`;
    // Read as the console reads it: a role bound by the tenants' policy.
    const plan = await asService(
      sql,
      "console",
      { tenantId: tenant },
      ({ sql }) =>
        sql<{ "QUERY PLAN": [{ Plan: PlanNode }] }[]>`
        explain (analyze, buffers, format json)
        select count(*) from queue.deliveries d
         where ${uncounted(sql, subscriber)}`,
    );
    const root = plan[0]["QUERY PLAN"][0].Plan;
    assert.equal(root["Actual Rows"], 1);
    // The position bounds the index scan: the history's pages are not
    // read, where a filter after the scan reads every one of them.
    const buffers = root["Shared Hit Blocks"] + root["Shared Read Blocks"];
    assert.ok(buffers < 20, `read ${buffers} pages for no delivery`);
  });
});

interface PlanNode {
  "Actual Rows": number;
  "Shared Hit Blocks": number;
  "Shared Read Blocks": number;
}

Deno.test("the audit counts nothing of a tenant wiped after its deliveries were read", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const wiped = await createSandbox(sql, "wiped");
    const live = await createSandbox(sql, "live");
    await placeOrders(sql, wiped, ["w-1"]);
    await placeOrders(sql, live, ["l-1"]);
    await new PgMove(new Ledger(sql, ROUTING)).move(SENDER, 100);
    const claimed = await claimDeliveries(sql, "consumer-1", 100, 60_000);
    // The wiped tenant's deliveries finish first, so the audit reads them
    // before the live tenant's.
    const byWiped = (d: { tenantId: string }) => d.tenantId === wiped ? 0 : 1;
    claimed.sort((a, b) => byWiped(a) - byWiped(b));
    for (const d of claimed) {
      await finishDeliveries(sql, [answered(d)]);
    }
    for (const r of RECEIVERS) {
      await sql`grant usage on schema ${sql(r)} to console`;
      await sql`grant select on ${sql(r + ".inbox")} to console`;
    }
    // The wipe ran to its end between the audit's read and its record: the
    // tenant is wiped while its deliveries are still there to be read.
    await sql`update platform.tenants set wiping_at = now(), wiped_at = now()
               where id = ${wiped}`;
    const audit = {
      sql,
      reader: "console",
      inboxOf: (s: string) => `${s}.inbox`,
      subscribers: RECEIVERS,
    };
    const livePerTenant = claimed.filter((d) => d.tenantId === live).length;
    await waitFor(
      "the audit to reach the live tenant's deliveries",
      async () => {
        await auditOnce(audit);
        return await countedSoFar(sql) >= livePerTenant;
      },
    );
    const rows = await sql<{ tenant_id: string; n: number }[]>`
      select tenant_id, (closed + mismatch)::int as n
        from queue.closure_counts`;
    assert.ok(rows.length > 0);
    assert.ok(
      rows.every((r) => r.tenant_id === live),
      "nothing counted of the wiped tenant",
    );
    assert.equal(rows.reduce((n, r) => n + r.n, 0), livePerTenant);
    const [mismatched] = await sql<{ n: number }[]>`
      select count(*)::int as n from queue.mismatches where tenant_id = ${wiped}`;
    assert.equal(mismatched.n, 0);
  }, { max: 4 });
});
