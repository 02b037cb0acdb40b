-- The core says tenant, the field's word, where its first version used the
-- word of the application it came from. Renames keep every row and right.
-- A policy names its functions and columns by their ids, so the old
-- policies hold until each part's next file has renamed its tables' column
-- and made their policy again, under its new name.

alter table {{platform}}.sandboxes rename to tenants;
alter table {{platform}}.tenants
  rename constraint sandboxes_wiped_after_wiping to tenants_wiped_after_wiping;
alter index {{platform}}.sandboxes_pkey rename to tenants_pkey;
alter index {{platform}}.sandboxes_wiping rename to tenants_wiping;
alter table {{platform}}.tenants
  rename constraint sandboxes_name_check to tenants_name_check;

alter table {{platform}}.closed_refusals rename column sandbox_id to tenant_id;
alter table {{platform}}.closed_refusals
  rename constraint closed_refusals_sandbox_id_fkey
  to closed_refusals_tenant_id_fkey;
alter index {{platform}}.closed_refusals_by_sandbox
  rename to closed_refusals_by_tenant;

-- The tenant of the current transaction, set by lib/db/service.ts.
alter function {{platform}}.current_sandbox() rename to current_tenant;
create or replace function {{platform}}.current_tenant() returns uuid
  language sql stable
  as $$ select nullif(current_setting('app.tenant_id', true), '')::uuid $$;

alter function {{platform}}.all_sandboxes() rename to all_tenants;

-- The tenant policy of one table: rows of other tenants are neither seen
-- nor written. Both settings are read in scalar subqueries, once per
-- statement rather than once per row.
drop function {{platform}}.enable_sandbox_rls(regclass);
create function {{platform}}.enable_tenant_rls(t regclass) returns void
  language plpgsql
  as $$
begin
  execute format('alter table %s enable row level security', t);
  execute format('drop policy if exists tenant_isolation on %s', t);
  execute format(
    'create policy tenant_isolation on %s
       using (tenant_id = (select {{platform}}.current_tenant())
              or (select {{platform}}.all_tenants()))
       with check (tenant_id = (select {{platform}}.current_tenant())
                   or (select {{platform}}.all_tenants()))',
    t);
end $$;

-- The gate of every service transaction that names a tenant: a closed
-- tenant is refused with SQLSTATE 55W01 before anything is read or
-- written. A tenant without a row is open.
drop function {{platform}}.enter_sandbox(uuid);
create function {{platform}}.enter_tenant(id uuid) returns boolean
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  if exists (select from {{platform}}.tenants t
              where t.id = enter_tenant.id and t.wiping_at is not null) then
    raise exception using errcode = '55W01',
      message = format('tenant %s is closed: it is being wiped or was wiped',
                       id);
  end if;
  return true;
end $$;

-- True once the tenant's wipe has begun: for statements that store what a
-- worker held in memory, which may come after the wipe.
drop function {{platform}}.sandbox_closed(uuid);
create function {{platform}}.tenant_closed(id uuid) returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$
    select exists (select from {{platform}}.tenants t
                    where t.id = $1 and t.wiping_at is not null)
  $$;

-- The tenants being wiped, whose rows the relay and consumers leave alone.
drop function {{platform}}.wiping_sandboxes();
create function {{platform}}.wiping_tenants() returns uuid[]
  language sql stable security definer
  set search_path = pg_catalog
  as $$
    select coalesce(array_agg(t.id), '{}') from {{platform}}.tenants t
     where t.wiping_at is not null and t.wiped_at is null
  $$;

alter table {{platform}}.faults rename column sandbox_id to tenant_id;
drop policy sandbox_isolation on {{platform}}.faults;
select {{platform}}.enable_tenant_rls('{{platform}}.faults');
