/**
 * Split mode's layout: which database each service gets, and what of the
 * messaging core it holds there. A sender holds its outbox and, over
 * PostgreSQL, a queue of its own, so that the relay's move stays one
 * transaction inside the sender's database; a receiver holds its inbox.
 * No database is shared by every delivery, and no transaction touches two.
 *
 * The default is still one database for every service; this layout is
 * what `kit/postgres/migrate.ts`'s `migrateServiceDatabase` applies, one
 * database at a time.
 */
import { withDatabase } from "../lib/db/connect.ts";
import type { MessagingPart } from "../lib/schema.ts";
import { RECEIVERS, SENDERS } from "./routing.ts";

/** One database of split mode. */
export interface ServiceDatabase {
  /** The service, and the end of its database's name. */
  name: string;
  /** The parts of the messaging core it holds (tenancy always). */
  parts: readonly MessagingPart[];
  /**
   * Whether the service has a schema and a role of its own. The console's
   * database has neither: it holds sign-in sessions and the wipes, in the
   * core's `platform` schema.
   */
  ownSchema: boolean;
}

const sender = (name: string): ServiceDatabase => ({
  name,
  parts: ["outbox", "queue"],
  ownSchema: true,
});
const receiver = (name: string): ServiceDatabase => ({
  name,
  parts: ["inbox"],
  ownSchema: true,
});

/** Every database of split mode, in the order they are made. */
export const SPLIT_DATABASES: readonly ServiceDatabase[] = [
  { name: "console", parts: [], ownSchema: false },
  // Orders sends, and receives PaymentSucceeded from billing.
  { ...sender("orders"), parts: ["outbox", "inbox", "queue"] },
  ...SENDERS.filter((s) => s !== "orders").map(sender),
  ...RECEIVERS.map(receiver),
  sender("lab_sender"),
  receiver("lab_receiver"),
  // The queue lab publishes its own jobs, to a queue beside the printer.
  { ...receiver("lab_printer"), parts: ["inbox", "queue"] },
];

/**
 * Where each service's database is: `DATABASE_URL_<SERVICE>` when it is
 * set (another server, say), or else the database `<base>_<service>` on
 * the server of `baseUrl`.
 */
export function serviceDatabaseUrls(
  baseUrl: string,
  env: (name: string) => string | undefined = (name) => Deno.env.get(name),
): Map<string, string> {
  const base = new URL(baseUrl).pathname.slice(1) || "postgres";
  return new Map(SPLIT_DATABASES.map(({ name }) => [
    name,
    env(`DATABASE_URL_${name.toUpperCase()}`) ??
      withDatabase(baseUrl, `${decodeURIComponent(base)}_${name}`),
  ]));
}
