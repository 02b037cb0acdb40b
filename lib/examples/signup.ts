/**
 * The core on a plain database, with two made-up services: `accounts` signs
 * a user up and owes a SignupCompleted message; `mailer` receives it and
 * sends the welcome email once. Quoted by lib/README.md, and run by the
 * suite (tests/core/example_test.ts).
 *
 *     deno run -A lib/examples/signup.ts postgres://user@host/empty_db
 */
import {
  append,
  type Apply,
  asService,
  builtCarrier,
  type Carrier,
  connect,
  createLogger,
  createMessaging,
  Dispatcher,
  inboxBatchHandler,
  inboxHandler,
  inPlatform,
  type Logger,
  migrateMessaging,
  newEnvelope,
  type Routing,
  schemaNames,
  type Sql,
} from "../mod.ts";

/** A service: a role of its own and a schema it works in. */
async function createService(sql: Sql, name: string) {
  // Roles belong to the cluster: another database may have made it.
  await sql`create role ${sql(name)} nologin`.catch((e) => {
    if (!["42710", "23505"].includes(e.code)) throw e;
  });
  await sql`grant ${sql(name)} to current_user`;
  await sql`create schema if not exists ${sql(name)}`;
  await sql`grant usage on schema ${sql(name)}, ${sql(schemaNames().platform)}
            to ${sql(name)}`;
  await sql`grant select on
    ${sql(inPlatform("tenants"))}, ${sql(inPlatform("faults"))}
            to ${sql(name)}`;
  await sql`alter default privileges in schema ${sql(name)}
            grant select, insert, update, delete on tables to ${sql(name)}`;
}

/** The mailer's effect, in its inbox's transaction: once per message id. */
const sendWelcome: Apply = async (tx, envelope) => {
  const { email } = envelope.payload as { email: string };
  await tx.sql`insert into mailer.welcome_emails (email, tenant_id, message_id)
               values (${email}, ${envelope.tenantId}, ${envelope.messageId})`;
  return { sent: email };
};

/** Sets the database up: the core's schema, then the two services. */
export async function setUp(sql: Sql, log: Logger) {
  await migrateMessaging(sql, log);
  await createService(sql, "accounts");
  await sql`create table if not exists accounts.users (
    email text primary key, tenant_id uuid not null)`;
  await sql`select ${sql(inPlatform("enable_tenant_rls"))}('accounts.users')`;
  if (!(await sql`select to_regclass('accounts.outbox') as t`)[0].t) {
    await sql`select
      ${sql(inPlatform("create_outbox_with_indexes"))}('accounts')`;
  }
  await createService(sql, "mailer");
  await sql`create table if not exists mailer.welcome_emails (
    email text primary key, tenant_id uuid not null, message_id uuid)`;
  await sql`select
    ${sql(inPlatform("enable_tenant_rls"))}('mailer.welcome_emails')`;
  if (!(await sql`select to_regclass('mailer.inbox') as t`)[0].t) {
    await sql`select ${sql(inPlatform("create_inbox"))}('mailer')`;
  }
}

/** Builds the carrier the messages travel by, for a pool and a routing. */
export type CarrierOf = (sql: Sql, routing: Routing) => Carrier;

/**
 * Signs `email` up in `tenant` and waits until the mailer has sent its
 * welcome email. Returns the emails the mailer holds for that address.
 * The messages go through the PostgreSQL queue, the default carrier, unless
 * `carrierOf` gives another (JetStream's: tests/core/schema_names_test.ts).
 */
export async function signUp(
  url: string,
  tenant: string,
  email: string,
  log: Logger,
  carrierOf?: CarrierOf,
): Promise<number> {
  const sql = connect(url, { max: 4 });
  const routing = { SignupCompleted: ["mailer"] };
  const carrier = carrierOf?.(sql, routing);
  // The mailer's endpoints, served in this process. Across processes, the
  // subscriber's URL is a real one and the dispatcher sends it there.
  const mailer = {
    sql,
    service: "mailer",
    label: "Mailer",
    replayHorizonDays: 30,
    log,
    apply: sendWelcome,
  };
  const dispatcher = new Dispatcher().register(
    "http://mailer.example",
    async (request) =>
      new URL(request.url).pathname === "/batch"
        ? await inboxBatchHandler(mailer)(request)
        : await inboxHandler(mailer)(request),
  );
  // Only what differs from the defaults (lib/messaging.ts `TUNING`).
  const messaging = createMessaging({
    ledger: { sql, url },
    routing,
    senders: ["accounts"],
    subscribers: {
      mailer: {
        url: "http://mailer.example/one",
        batchUrl: "http://mailer.example/batch",
        label: "Mailer",
      },
    },
    dispatcher,
    log,
    carrier: carrier && builtCarrier(carrier),
    tuning: { pollMs: 500, relayRetryMs: 500, retryDelaysMs: [1_000, 5_000] },
  });
  await messaging.start();
  try {
    // The command: the user and the message it owes, in one transaction.
    await asService(sql, "accounts", { tenantId: tenant }, async (tx) => {
      await tx.sql`insert into accounts.users (email, tenant_id)
                   values (${email}, ${tenant})`;
      await append(tx, [
        newEnvelope({
          type: "SignupCompleted",
          aggregateId: email,
          aggregateVersion: 1,
          tenantId: tenant,
          payload: { email },
        }),
      ]);
    });
    messaging.wake("accounts");
    for (let waited = 0; waited < 10_000; waited += 50) {
      const [{ n }] = await sql<{ n: number }[]>`
        select count(*)::int as n from mailer.welcome_emails
         where email = ${email}`;
      if (n > 0) return n;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`no welcome email for ${email} after 10 s`);
  } finally {
    await messaging.stop();
    await sql.end();
  }
}

if (import.meta.main) {
  const url = Deno.args[0] ?? Deno.env.get("DATABASE_URL");
  if (!url) throw new Error("give a database URL");
  const log = createLogger("info");
  const sql = connect(url, { max: 2 });
  await setUp(sql, log);
  const [{ id }] = await sql<{ id: string }[]>`
    insert into ${sql(inPlatform("tenants"))}
      (name) values ('example') returning id`;
  await sql.end();
  const sent = await signUp(url, id, `user-${Date.now()}@example.com`, log);
  console.log(`welcome emails sent: ${sent}`);
}
