/**
 * The names of the core's two schemas: `platform` (tenancy: the tenants'
 * registry, fault switches, refusals, and the functions that give a
 * service its outbox or inbox) and `queue` (the PostgreSQL queue's tables).
 *
 * They are the defaults. A program whose database has a schema of either
 * name already picks others with {@link useSchemaNames}, once, before the
 * core's first query and before {@link migrateMessaging} makes them. The
 * names are set for the whole process: every pool and transaction of the
 * core reads the same tables.
 *
 * Queries name a table as `${sql(inQueue("deliveries"))}`: postgres.js
 * quotes the identifier, and the query's text, and so its prepared
 * statement, stays the same for the life of the process.
 *
 * @module
 */

/** The core's schemas. */
export interface SchemaNames {
  platform: string;
  queue: string;
}

export const DEFAULT_SCHEMA_NAMES: Readonly<SchemaNames> = Object.freeze({
  platform: "platform",
  queue: "queue",
});

/** A lower-case SQL identifier that needs no quotes, as migrations use it. */
const NAME = /^[a-z_][a-z0-9_]{0,62}$/;

let current: Readonly<SchemaNames> = DEFAULT_SCHEMA_NAMES;
let used = false;

/**
 * Sets the core's schema names for this process. Throws on a name that is
 * not a plain lower-case identifier, on two parts given the same name, and
 * on a change after the core has read them (a query already sent under the
 * old names would disagree with the next).
 */
export function useSchemaNames(names: Partial<SchemaNames>): void {
  const next = { ...current, ...names };
  for (const [part, name] of Object.entries(next)) {
    if (!NAME.test(name)) {
      throw new TypeError(
        `schema name for ${part} must match ${NAME}: ${JSON.stringify(name)}`,
      );
    }
  }
  if (next.platform === next.queue) {
    throw new TypeError("the platform and queue schemas need two names");
  }
  const same = next.platform === current.platform &&
    next.queue === current.queue;
  if (used && !same) {
    throw new Error(
      "the core's schema names were read already: set them first",
    );
  }
  current = Object.freeze(next);
}

/** The names in use; from now on they are fixed. */
export function schemaNames(): Readonly<SchemaNames> {
  used = true;
  return current;
}

/** `name` in the queue's schema, for `sql(...)` to quote. */
export function inQueue(name: string): string {
  return `${schemaNames().queue}.${name}`;
}

/** `name` in the platform schema, for `sql(...)` to quote. */
export function inPlatform(name: string): string {
  return `${schemaNames().platform}.${name}`;
}
