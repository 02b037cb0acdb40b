-- One role and one schema per service, a read-only console role, and the
-- sandboxes that every service row belongs to.
--
-- Roles are NOLOGIN: the program connects as one user and begins each service
-- transaction with SET LOCAL ROLE <service>. A role has rights on its own
-- schema alone, so a transaction that touches another service's table fails
-- with "permission denied".

do $$
declare
  r text;
begin
  foreach r in array array['orders', 'billing', 'kitchen', 'schedule',
    'dispatch', 'crm', 'customers', 'receipts', 'queue', 'console']
  loop
    if not exists (select 1 from pg_roles where rolname = r) then
      begin
        execute format('create role %I nologin', r);
      exception when duplicate_object or unique_violation then
        null; -- another database of the same cluster created it meanwhile
      end;
    end if;
    -- Since PostgreSQL 16 a CREATEROLE user does not become a member of the
    -- roles it creates; it must be one to SET ROLE.
    if not pg_has_role(current_user, r, 'MEMBER') then
      execute format('grant %I to %I', r, current_user);
    end if;
  end loop;
end $$;

create schema platform;

-- The sandbox of the current transaction, set by lib/db/service.ts; null when
-- none was set, which matches no row.
create function platform.current_sandbox() returns uuid
  language sql stable
  as $$ select nullif(current_setting('app.sandbox_id', true), '')::uuid $$;

-- True in the transactions of relays and consumers, which work for every
-- sandbox at once. Web requests never set it.
create function platform.all_sandboxes() returns boolean
  language sql stable
  as $$ select coalesce(current_setting('app.scope', true), '') = 'workers' $$;

-- Turns on the sandbox policy for one table: rows of other sandboxes are
-- neither visible nor writable.
create function platform.enable_sandbox_rls(t regclass) returns void
  language plpgsql
  as $$
begin
  execute format('alter table %s enable row level security', t);
  execute format(
    'create policy sandbox_isolation on %s
       using (sandbox_id = platform.current_sandbox() or platform.all_sandboxes())
       with check (sandbox_id = platform.current_sandbox() or platform.all_sandboxes())',
    t);
end $$;

create table platform.sandboxes (
  id uuid primary key default gen_random_uuid(),
  name text not null check (length(name) between 1 and 80),
  created_at timestamptz not null default now(),
  -- set by the daily wipe once every service row of the sandbox is deleted
  wiped_at timestamptz
);

do $$
declare
  s text;
begin
  foreach s in array array['orders', 'billing', 'kitchen', 'schedule',
    'dispatch', 'crm', 'customers', 'receipts', 'queue']
  loop
    execute format('create schema %I', s);
    execute format('grant usage on schema %I to %I, console', s, s);
    execute format('grant usage on schema platform to %I', s);
    execute format('alter default privileges in schema %I
      grant select, insert, update, delete on tables to %I', s, s);
    execute format('alter default privileges in schema %I
      grant usage, select on sequences to %I', s, s);
    execute format('alter default privileges in schema %I
      grant select on tables to console', s);
  end loop;
end $$;

grant usage on schema platform to console;
grant select on platform.sandboxes to orders, billing, kitchen, schedule,
  dispatch, crm, customers, receipts, queue, console;
