-- Tenancy: what every other part of the core stands on.
--
-- Roles. Nothing logs in as them: the program connects as one user and
-- begins each transaction with SET LOCAL ROLE (lib/db/service.ts). `relay`
-- moves outbox rows into the queue, `queue` is the consumers' bookkeeping,
-- and `console` reads. An application adds one role per service.
do $$
declare
  r text;
begin
  foreach r in array array['queue', 'console', 'relay']
  loop
    if not exists (select 1 from pg_roles where rolname = r) then
      begin
        execute format('create role %I nologin', r);
      exception when duplicate_object or unique_violation then
        null; -- another database of the same cluster made it meanwhile
      end;
    end if;
    -- Since PostgreSQL 16 a CREATEROLE user is not a member of the roles it
    -- makes; it must be one to SET ROLE.
    if not pg_has_role(current_user, r, 'MEMBER') then
      execute format('grant %I to %I', r, current_user);
    end if;
  end loop;
end $$;

create schema {{platform}};
grant usage on schema {{platform}} to console, queue, relay;

-- The tenant of the current transaction, set by lib/db/service.ts; null
-- when none was set, which matches no row.
create function {{platform}}.current_sandbox() returns uuid
  language sql stable
  as $$ select nullif(current_setting('app.sandbox_id', true), '')::uuid $$;

-- True in the transactions of relays and consumers, which work for every
-- tenant at once.
create function {{platform}}.all_sandboxes() returns boolean
  language sql stable
  as $$ select coalesce(current_setting('app.scope', true), '') = 'workers' $$;

-- The tenant policy of one table: rows of other tenants are neither seen
-- nor written. Both settings are read in scalar subqueries, once per
-- statement rather than once per row.
create function {{platform}}.enable_sandbox_rls(t regclass) returns void
  language plpgsql
  as $$
begin
  execute format('alter table %s enable row level security', t);
  execute format('drop policy if exists sandbox_isolation on %s', t);
  execute format(
    'create policy sandbox_isolation on %s
       using (sandbox_id = (select {{platform}}.current_sandbox())
              or (select {{platform}}.all_sandboxes()))
       with check (sandbox_id = (select {{platform}}.current_sandbox())
                   or (select {{platform}}.all_sandboxes()))',
    t);
end $$;

-- Raises `message` with SQLSTATE `code`: a statement that decides for
-- itself to abort its transaction calls it in an expression.
create function {{platform}}.refuse(code text, message text) returns boolean
  language plpgsql
  as $$
begin
  raise exception using errcode = code, message = message;
end $$;

-- A stored envelope is immutable: a retry sends exactly what was stored.
-- The outboxes and the queue's messages both keep this trigger.
create function {{platform}}.forbid_envelope_change() returns trigger
  language plpgsql
  as $$
begin
  if new.envelope is distinct from old.envelope
     or new.message_id is distinct from old.message_id then
    raise exception 'a stored envelope is immutable (message %)', old.message_id
      using errcode = 'check_violation';
  end if;
  return new;
end $$;

-- The tenants. A tenant is open until its wipe begins (wiping_at), then
-- closed to work for good; wiped_at is set once its rows are gone.
create table {{platform}}.sandboxes (
  id uuid primary key default gen_random_uuid(),
  name text not null check (length(name) between 1 and 80),
  created_at timestamptz not null default now(),
  wiped_at timestamptz,
  wiping_at timestamptz,
  constraint sandboxes_wiped_after_wiping
    check (wiped_at is null or wiping_at is not null)
);
create index sandboxes_wiping on {{platform}}.sandboxes (id)
  where wiping_at is not null and wiped_at is null;
grant select on {{platform}}.sandboxes to console, queue;

-- Fault switches, per tenant, read by the relay, consumers and receivers.
create table {{platform}}.faults (
  sandbox_id uuid not null,
  name text not null check (name ~ '^[a-zA-Z]{1,40}$'),
  enabled boolean not null default false,
  updated_at timestamptz not null default now(),
  primary key (sandbox_id, name)
);
select {{platform}}.enable_sandbox_rls('{{platform}}.faults');
grant select on {{platform}}.faults to console, queue, relay;

-- The gate of every service transaction that names a tenant: a closed
-- tenant is refused with SQLSTATE 55W01 before anything is read or
-- written. A tenant without a row is open.
create function {{platform}}.enter_sandbox(id uuid) returns boolean
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  if exists (select from {{platform}}.sandboxes s
              where s.id = enter_sandbox.id and s.wiping_at is not null) then
    raise exception using errcode = '55W01',
      message = format('sandbox %s is closed: it is being wiped or was wiped',
                       id);
  end if;
  return true;
end $$;

-- True once the tenant's wipe has begun: for statements that store what a
-- worker held in memory, which may come after the wipe.
create function {{platform}}.sandbox_closed(id uuid) returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$
    select exists (select from {{platform}}.sandboxes s
                    where s.id = $1 and s.wiping_at is not null)
  $$;

-- The tenants being wiped, whose rows the relay and consumers leave alone.
create function {{platform}}.wiping_sandboxes() returns uuid[]
  language sql stable security definer
  set search_path = pg_catalog
  as $$
    select coalesce(array_agg(s.id), '{}') from {{platform}}.sandboxes s
     where s.wiping_at is not null and s.wiped_at is null
  $$;

-- What came for a closed tenant and was refused, and why.
create table {{platform}}.closed_refusals (
  id bigint generated always as identity primary key,
  sandbox_id uuid not null references {{platform}}.sandboxes (id),
  refused_at timestamptz not null default now(),
  refused_by text not null,
  what text not null
    check (what in ('delivery', 'message', 'webhook', 'request')),
  key text,
  reason text not null
);
create index closed_refusals_by_sandbox
  on {{platform}}.closed_refusals (sandbox_id, id);
grant insert on {{platform}}.closed_refusals to queue;
grant select on {{platform}}.closed_refusals to console;
