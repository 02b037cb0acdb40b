/**
 * A tenant closed to work: its wipe has begun (`platform.tenants`
 * `wiping_at`, lib/db/migrations/0001_tenancy.sql). From then on nothing of
 * it is applied: a service transaction that names it is refused as it
 * begins (service.ts), the relay's and consumers' claims leave its rows,
 * and what arrives for it is refused with a row of
 * `platform.closed_refusals` that says why, written by whoever refused it.
 */
import type { Fragment, Sql, TxSql } from "./connect.ts";
import { inPlatform } from "./names.ts";

/**
 * A condition that `column`, a tenant id, is not a tenant being wiped: the
 * relay's and consumers' claims leave such rows, which the wipe deletes.
 *
 * The tenants are read inline, by the partial index of those being wiped,
 * so the look is planned with the statement and cached with its plan.
 * Through `wiping_tenants()`, a function with its own search_path that
 * PostgreSQL plans anew at each call, it cost 0.07 to 0.3 ms for each
 * place a statement named it (bench/HISTORY.md). The roles that run these
 * statements (`queue`, `relay`, `console`) may read the tenants; a
 * service's own role may not, and uses {@link notWipingAsService}.
 */
export function notWiping(sql: Sql | TxSql, column: string): Fragment {
  const tenants = sql(inPlatform("tenants"));
  return sql`${sql(column)} <> all(coalesce((
    select array_agg(w.id) from ${tenants} w
     where w.wiping_at is not null and w.wiped_at is null), '{}'))`;
}

/**
 * A condition that `column`, a tenant id, names no tenant whose wipe has
 * begun, finished ones included: for work read before a wipe and written
 * after it, which {@link notWiping} would let through once the wipe is
 * done. One look-up by primary key a row, where {@link notWiping} reads
 * the few tenants being wiped once a statement.
 */
export function wipeNotBegun(sql: Sql | TxSql, column: string): Fragment {
  return sql`not exists (
    select from ${sql(inPlatform("tenants"))} w
     where w.id = ${sql(column)} and w.wiping_at is not null)`;
}

/**
 * {@link notWiping} for a statement that runs as a service's own role,
 * which need not read the tenants: through `wiping_tenants()`, which
 * runs with its owner's rights.
 */
export function notWipingAsService(
  sql: Sql | TxSql,
  column: string,
): Fragment {
  return sql`${sql(column)} <> all((select
    ${sql(inPlatform("wiping_tenants"))}())::uuid[])`;
}

/** The SQLSTATE of `platform.enter_tenant`'s refusal. */
export const TENANT_CLOSED_CODE = "55W01";

/**
 * A service transaction named a closed tenant and was refused before it
 * read or wrote anything. Never worth a retry: a tenant does not open
 * again.
 */
export class TenantClosed extends Error {
  override name = "TenantClosed";
  constructor(
    readonly tenantId: string,
    readonly service: string,
    options?: ErrorOptions,
  ) {
    super(
      `tenant ${tenantId} is closed: it is being wiped or was wiped, and nothing more of it is applied`,
      options,
    );
  }
}

/** True for the refusal as PostgreSQL reports it. */
export function isTenantClosedError(error: unknown): boolean {
  return (error as { code?: string } | null)?.code === TENANT_CLOSED_CODE;
}

/** What arrived for a closed tenant, who refused it, and why. */
export interface ClosedRefusal {
  tenantId: string;
  /** The service (or part) that refused it. */
  refusedBy: string;
  what: "delivery" | "message" | "webhook" | "request";
  /** The message id (and subscriber), the event id, the method and path. */
  key: string | null;
  reason: string;
}

/**
 * Records a refusal, in a statement of its own as the program's user: the
 * refused transaction was rolled back, and the tenant's services may no
 * longer write anything of it.
 */
export async function recordClosedRefusal(
  sql: Sql,
  refusal: ClosedRefusal,
): Promise<void> {
  await sql`
    insert into ${sql(inPlatform("closed_refusals"))}
      (tenant_id, refused_by, what, key, reason)
    values (${refusal.tenantId}, ${refusal.refusedBy}, ${refusal.what},
            ${refusal.key}, ${refusal.reason})`;
}
