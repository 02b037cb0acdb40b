/** Sandboxes: each signed-in visitor (or guest) works in one of their own. */
import type { Sql } from "../lib/db/connect.ts";
import type { TenantClosed } from "../lib/db/closed.ts";

/** lib/'s refusal of a closed tenant, in the bakery's words. */
export function sandboxClosedMessage(error: TenantClosed): string {
  return `sandbox ${error.tenantId} is closed: it is being wiped or was wiped, and nothing more of it is applied`;
}

export async function createSandbox(sql: Sql, name: string): Promise<string> {
  const [row] = await sql<{ id: string }[]>`
    insert into platform.tenants (name) values (${name}) returning id`;
  return row.id;
}

export async function renameSandbox(sql: Sql, id: string, name: string) {
  await sql`update platform.tenants set name = ${name} where id = ${id}`;
}
