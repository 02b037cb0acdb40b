/** Sandboxes: each signed-in visitor (or guest) works in one of their own. */
import type { Sql } from "../lib/db/connect.ts";

export async function createSandbox(sql: Sql, name: string): Promise<string> {
  const [row] = await sql<{ id: string }[]>`
    insert into platform.sandboxes (name) values (${name}) returning id`;
  return row.id;
}

export async function renameSandbox(sql: Sql, id: string, name: string) {
  await sql`update platform.sandboxes set name = ${name} where id = ${id}`;
}
