-- The platform: one role and one schema per service, a read-only console
-- role, the relay's role, the sandboxes that every service row belongs to
-- with the policy that keeps them apart, and what the program keeps for
-- itself (sign-in sessions, the daily wipes, fault switches).
--
-- Roles are NOLOGIN: the program connects as one user and begins each service
-- transaction with SET LOCAL ROLE <service>. A role has rights on its own
-- schema alone, so a transaction that touches another service's table fails
-- with "permission denied". The relay is a role of its own, with the few
-- rights of 0003_queue.sql; queue is the consumers' role.

do $$
declare
  r text;
begin
  foreach r in array array['orders', 'billing', 'kitchen', 'schedule',
    'dispatch', 'crm', 'customers', 'receipts', 'queue', 'console', 'relay']
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
-- neither visible nor writable. Every service table calls it, and so do the
-- tests' own tables; called again on a table, it replaces the policy.
--
-- The current sandbox and the scope are scalar subqueries, which PostgreSQL
-- evaluates once per statement (an InitPlan) and the rows compare against
-- its value; called plainly, they were two lookups of a setting by name and
-- a text-to-uuid cast for every row looked at, on every read, every inserted
-- row's check, every relay and consumer batch. The settings cannot change
-- while a statement runs, so the rule and the rows are the same: 10,000
-- pending outbox rows of one sandbox counted in 6.5 ms instead of 15.6
-- (measured).
create function platform.enable_sandbox_rls(t regclass) returns void
  language plpgsql
  as $$
begin
  execute format('alter table %s enable row level security', t);
  execute format('drop policy if exists sandbox_isolation on %s', t);
  execute format(
    'create policy sandbox_isolation on %s
       using (sandbox_id = (select platform.current_sandbox())
              or (select platform.all_sandboxes()))
       with check (sandbox_id = (select platform.current_sandbox())
                   or (select platform.all_sandboxes()))',
    t);
end $$;

-- A statement that must be all or nothing, and decides so itself, calls
-- platform.refuse(code, message): it raises `message` with the SQLSTATE
-- `code`, which aborts the statement and with it the transaction. The order
-- statement (services/orders/orders_sql.ts) refuses an order that does not
-- fit the day's capacity this way, so that its COMMIT can go out right
-- behind it instead of after its answer: the COMMIT then answers ROLLBACK,
-- and nothing of the order stays. Declared to return a value, so that it
-- can stand in an expression; it never returns.
create function platform.refuse(code text, message text) returns boolean
  language plpgsql
  as $$
begin
  raise exception using errcode = code, message = message;
end $$;

create table platform.sandboxes (
  id uuid primary key default gen_random_uuid(),
  name text not null check (length(name) between 1 and 80),
  created_at timestamptz not null default now(),
  -- set by the daily wipe once every service row of the sandbox is deleted
  wiped_at timestamptz
);

-- One schema per service (queue included): its role works in it, the
-- console reads it. The default privileges give every table and sequence
-- made later in the schema to its role, and every table to the console.
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

-- Fault switches, per sandbox, read at run time by the relay, the consumers
-- and the receivers.
create table platform.faults (
  sandbox_id uuid not null,
  name text not null check (name ~ '^[a-zA-Z]{1,40}$'),
  enabled boolean not null default false,
  updated_at timestamptz not null default now(),
  primary key (sandbox_id, name)
);
select platform.enable_sandbox_rls('platform.faults');
grant select on platform.faults to orders, billing, kitchen, schedule,
  dispatch, crm, customers, receipts, queue, console;

-- Sign-in sessions, stored server side. The cookie holds a random token; the
-- table keeps only its SHA-256, so a leaked table does not leak sessions.
create table platform.sessions (
  id text primary key,
  sandbox_id uuid not null references platform.sandboxes (id),
  -- null for a guest (a storefront visitor who has not signed in)
  name text check (length(name) between 1 and 80),
  csrf_token text not null,
  created_at timestamptz not null default now(),
  last_seen_at timestamptz not null default now(),
  -- set at sign-out or rotation; an ended session is never valid again
  ended_at timestamptz
);
create index sessions_by_sandbox on platform.sessions (sandbox_id);

-- The daily sandbox wipe: one row per wipe (the 10:00 UTC boundary it wipes
-- up to). A row without finished_at is an unfinished wipe, retried by the
-- 15-minute schedule.
create table platform.wipes (
  cutoff timestamptz primary key,
  started_at timestamptz not null default now(),
  finished_at timestamptz,
  sandboxes int not null default 0,
  rows_deleted bigint not null default 0,
  error text
);
