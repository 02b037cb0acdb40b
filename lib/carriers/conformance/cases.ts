/**
 * Every scenario as a case on every carrier in every layout, each named
 * after its layout and carrier ("jetstream: lost acknowledgement ...",
 * "split jetstream: lost acknowledgement ..."), and how one case runs: on
 * fresh databases from the harness, with the test services and a tenant,
 * and over JetStream on a stream of its own, dropped after.
 */
import type { Sql } from "../../db/connect.ts";
import { poolOf, routeServices } from "../../db/service.ts";
import { redrive as redriveDeadLetters } from "../../ledger/dead_letters.ts";
import {
  type CarrierName,
  CARRIERS,
  dropStream,
  openStream,
} from "./carriers.ts";
import { StreamView } from "./broker.ts";
import {
  type CaseDatabase,
  type Harness,
  type Layout,
  LAYOUTS,
  type Scenario,
} from "./harness.ts";
import {
  createTenant,
  createTestServices,
  RECEIVERS,
  SENDER,
} from "./services.ts";
import { withWorkers } from "./workers.ts";

/** One scenario on one carrier in one layout, ready to run. */
export interface ConformanceCase {
  /** "<layout> <carrier>: <scenario>", the layout left out when shared. */
  name: string;
  carrier: CarrierName;
  layout: Layout;
  scenario: Scenario;
  run(): Promise<void>;
}

/**
 * Every scenario on every carrier, in every layout, in the order the suite
 * runs them. The runner registers each with its test runner.
 */
export function conformanceCases(
  harness: Harness,
  scenarios: readonly Scenario[],
): ConformanceCase[] {
  const cases: ConformanceCase[] = [];
  for (const layout of LAYOUTS) {
    for (const carrier of CARRIERS) {
      for (const scenario of scenarios) {
        const prefix = layout === "shared" ? "" : `${layout} `;
        cases.push({
          name: `${prefix}${carrier}: ${scenario.name}`,
          carrier,
          layout,
          scenario,
          run: () => runCase(harness, layout, carrier, scenario),
        });
      }
    }
  }
  return cases;
}

/**
 * Runs `fn` with the receivers' pools of `layout` (none when shared), and
 * always drops their databases after.
 */
async function withReceiverDatabases(
  harness: Harness,
  layout: Layout,
  fn: (pools: Map<string, Sql>) => Promise<void>,
) {
  const pools = new Map<string, Sql>();
  const made: CaseDatabase[] = [];
  try {
    if (layout === "split") {
      // Made at once: each clone waits on the server, not on the others.
      const opened = await Promise.allSettled(RECEIVERS.map(async (r) => {
        const db = await harness.database({ max: 4 });
        made.push(db);
        await createTestServices(db.sql, [r]);
        pools.set(r, db.sql);
      }));
      for (const o of opened) if (o.status === "rejected") throw o.reason;
    }
    await fn(pools);
  } finally {
    await Promise.allSettled(made.map((db) => db.drop()));
  }
}

async function runCase(
  harness: Harness,
  layout: Layout,
  carrier: CarrierName,
  scenario: Scenario,
) {
  const db = await harness.database();
  try {
    await withReceiverDatabases(harness, layout, async (receivers) => {
      await runIn(harness, db, receivers, layout, carrier, scenario);
    });
  } finally {
    await db.drop();
  }
}

async function runIn(
  harness: Harness,
  db: CaseDatabase,
  receivers: Map<string, Sql>,
  layout: Layout,
  carrier: CarrierName,
  scenario: Scenario,
) {
  const { sql } = db;
  const route = (pool: Sql) => {
    if (receivers.size > 0) routeServices(pool, (s) => receivers.get(s));
  };
  route(sql);
  await createTestServices(sql, layout === "split" ? [SENDER] : undefined);
  const tenantId = await createTenant(sql);
  const server = carrier === "jetstream" ? harness.jetStream : undefined;
  if (carrier === "jetstream" && !server) {
    throw new Error("a JetStream case, and no JetStream server given");
  }
  const stream = server?.streamName();
  const broker = server && stream
    ? await openStream(server.url, stream, RECEIVERS)
    : undefined;
  try {
    await scenario.run({
      carrier,
      layout,
      db,
      sql,
      at: (service) => poolOf(sql, service),
      route,
      tenantId,
      harness,
      stream,
      view: broker && new StreamView(broker),
      workers: (options, fn) =>
        withWorkers(
          harness,
          db,
          { transport: carrier, stream, ...options },
          fn,
        ),
      redrive: (tenant, filter, actor) =>
        redriveDeadLetters(sql, tenant, filter, actor, {
          republish: carrier === "jetstream",
        }),
    });
  } finally {
    await broker?.close();
    if (server && stream) await dropStream(server.url, stream);
  }
}
