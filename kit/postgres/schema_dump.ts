/**
 * A dump of a database's schema as readable SQL, read from the catalog
 * through postgres.js: roles that the schema names, schemas, default
 * privileges, types, functions, tables (columns, constraints, indexes,
 * triggers, row-level security and policies, grants), views, sequences,
 * owners and comments. pg_dump is no help here: a pg_dump refuses a server
 * newer than itself, and the embedded server may be newer than the machine's.
 *
 * migrations/schema.sql is this dump of a freshly migrated database, so that
 * a change to the migrations is reviewed as a change to the schema
 * (`deno task schema` writes it, tests/schema_test.ts compares).
 *
 * Deterministic: no OIDs, database name or locale in it; the user who
 * migrated owns everything and is named nowhere.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { MIGRATIONS_DIR } from "./migrate.ts";
import { type PrivilegeRow, readCatalog, readRoles } from "./schema_catalog.ts";
import { groupBy, readTables, renderTables } from "./schema_tables.ts";

/** The dump of a freshly migrated database, checked in beside the migrations. */
export const SCHEMA_FILE = new URL("schema.sql", MIGRATIONS_DIR);

const HEADER =
  `-- The schema of a freshly migrated database, read from the catalog by
-- kit/postgres/schema_dump.ts. Do not edit: change the migrations, run
-- \`deno task schema\`, and review the change to this file with them
-- (tests/schema_test.ts fails while the two differ). Objects are owned by
-- the user who migrated, to whom the roles are also granted when it is not
-- a superuser; neither is shown.`;

/** Privileges in the order GRANT lists them, whatever the catalog's order. */
const PRIVILEGE_ORDER = [
  "SELECT",
  "INSERT",
  "UPDATE",
  "DELETE",
  "TRUNCATE",
  "REFERENCES",
  "TRIGGER",
  "MAINTAIN",
  "USAGE",
  "CREATE",
  "CONNECT",
  "TEMPORARY",
  "EXECUTE",
];

/** What ALTER DEFAULT PRIVILEGES calls each pg_default_acl object type. */
const DEFAULT_OBJECTS: Record<string, string> = {
  r: "TABLES",
  S: "SEQUENCES",
  f: "FUNCTIONS",
  T: "TYPES",
  n: "SCHEMAS",
  L: "LARGE OBJECTS",
};

interface Grant {
  grantee: string;
  grantable: boolean;
  privileges: string[];
}

/** Grants of one object per grantee, privileges in GRANT's order. */
function grouped(
  rows: { grantee: string; grantable: boolean; privilege: string }[],
) {
  const by = new Map<string, Grant>();
  for (const r of rows) {
    const key = `${r.grantee} ${r.grantable}`;
    const g = by.get(key) ??
      { grantee: r.grantee, grantable: r.grantable, privileges: [] };
    g.privileges.push(r.privilege);
    by.set(key, g);
  }
  const rank = (p: string) =>
    PRIVILEGE_ORDER.includes(p) ? PRIVILEGE_ORDER.indexOf(p) : 99;
  return [...by.values()].map((g) => ({
    ...g,
    privileges: g.privileges.sort((a, b) =>
      rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0)
    ),
  }));
}

function grantLines(rows: PrivilegeRow[]): string[] {
  const out: string[] = [];
  const byObject = groupBy(rows, (r) => `${r.kind} ${r.target} ${r.column}`);
  for (const list of byObject.values()) {
    const { kind, target, column } = list[0];
    for (const g of grouped(list)) {
      const privileges = g.privileges.join(", ") +
        (column === null ? "" : ` (${column})`);
      const option = g.grantable ? " WITH GRANT OPTION" : "";
      out.push(
        `GRANT ${privileges} ON ${kind.toUpperCase()} ${target} TO ${g.grantee}${option};`,
      );
    }
  }
  return out;
}

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;
/** The schema of the database `sql` reaches, as text (see the module's doc). */
export async function dumpSchema(sql: Sql): Promise<string> {
  const { catalog, tables, roles } = await sql.begin(
    "isolation level repeatable read read only",
    async (tx) => {
      // Names outside pg_catalog are printed qualified, whatever the
      // connection's search_path was.
      await tx`set local search_path = pg_catalog`;
      const catalog = await readCatalog(tx);
      const tables = await readTables(tx);
      const named = new Set<string>([
        ...catalog.privileges.map((p) => p.grantee),
        ...catalog.defaultPrivileges.flatMap((d) => [d.grantee, d.role ?? ""]),
        ...catalog.owners.map((o) => o.owner),
        ...tables.policies.flatMap((p) => p.roles),
      ]);
      named.delete("PUBLIC");
      named.delete("");
      return { catalog, tables, roles: await readRoles(tx, [...named]) };
    },
  );
  const blocks: string[][] = [[HEADER]];
  const section = (title: string, lines: string[]) => {
    if (lines.length) blocks.push([`-- ${title}`, ...lines]);
  };

  section("Roles (cluster-wide: those the schema names)", [
    ...roles.roles.flatMap((r) => [
      `CREATE ROLE ${r.name} ${r.options};`,
      ...(r.settings ?? []).map((s) => `ALTER ROLE ${r.name} SET ${s};`),
      ...(r.comment === null
        ? []
        : [`COMMENT ON ROLE ${r.name} IS ${literal(r.comment)};`]),
    ]),
    ...roles.memberships.map((m) =>
      `GRANT ${m.role} TO ${m.member}${m.admin ? " WITH ADMIN OPTION" : ""};`
    ),
  ]);
  const privileges = groupBy(
    catalog.privileges,
    (p) => `${p.kind} ${p.target}`,
  );
  const grantsOf = (kind: string, target: string) =>
    grantLines(privileges.get(`${kind} ${target}`) ?? []);
  section(
    "Extensions",
    catalog.extensions.map((x) =>
      `CREATE EXTENSION ${x.name} SCHEMA ${x.schema} VERSION ${
        literal(x.version)
      };`
    ),
  );
  section("The database", grantsOf("database", "current_database()"));
  section(
    "Schemas",
    catalog.schemas.flatMap((s) => [
      s.builtin
        ? `-- schema ${s.name} (every database has it)`
        : `CREATE SCHEMA ${s.name};`,
      ...grantsOf("schema", s.name),
    ]),
  );
  section(
    "Default privileges of the user who migrated, unless another role is named",
    [
      ...groupBy(
        catalog.defaultPrivileges,
        (d) => `${d.role} ${d.schema} ${d.objtype}`,
      ).values(),
    ].flatMap((list) => {
      const { role, schema, objtype } = list[0];
      const head = "ALTER DEFAULT PRIVILEGES" +
        (role ? ` FOR ROLE ${role}` : "") +
        (schema ? ` IN SCHEMA ${schema}` : "");
      return grouped(list).map((g) =>
        `${head} GRANT ${g.privileges.join(", ")} ON ${
          DEFAULT_OBJECTS[objtype] ?? objtype
        } TO ${g.grantee}${g.grantable ? " WITH GRANT OPTION" : ""};`
      );
    }),
  );
  for (const t of catalog.types) {
    const head = t.typtype === "e"
      ? `CREATE TYPE ${t.name} AS ENUM (${t.labels ?? ""});`
      : `CREATE DOMAIN ${t.name} AS ${t.base}${
        t.default === null ? "" : ` DEFAULT ${t.default}`
      }${t.checks ? ` ${t.checks}` : ""};`;
    blocks.push([head, ...grantsOf("type", t.name)]);
  }
  for (const f of catalog.functions) {
    blocks.push([
      f.definition === null
        ? `-- aggregate ${f.target}`
        : `${f.definition.trimEnd()};`,
      ...grantsOf(f.kind, f.target),
    ]);
  }
  blocks.push(...renderTables(tables, grantsOf));
  for (const s of tables.sequences.filter((s) => s.table === null)) {
    blocks.push([
      `CREATE SEQUENCE ${s.name} ${s.definition};`,
      ...grantsOf("sequence", s.name),
    ]);
  }
  section(
    "Owners other than the user who migrated",
    catalog.owners.map((o) =>
      `ALTER ${o.kind.toUpperCase()} ${o.target} OWNER TO ${o.owner};`
    ),
  );
  section(
    "Comments",
    catalog.comments.map((c) =>
      `COMMENT ON ${
        c.type.replace(/^table (column|constraint)$/, "$1").toUpperCase()
      } ${c.identity} IS ${literal(c.text)};`
    ),
  );
  return blocks.map((b) => b.join("\n")).join("\n\n") + "\n";
}
