-- The inbox's tenant column is tenant_id (see tenancy/0002_tenant.sql),
-- in the inboxes made already and in those made from now on.

do $$
declare
  t regclass;
  s name;
begin
  for t in
    select c.oid::regclass
      from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      join pg_attribute a on a.attrelid = c.oid and a.attname = 'sandbox_id'
     where c.relkind in ('r', 'p')
       and c.relname in ('inbox', 'refusals', 'order_violations')
       and exists (select from pg_class i
                    where i.relnamespace = n.oid and i.relname = 'inbox')
  loop
    execute format('alter table %s rename column sandbox_id to tenant_id', t);
    if exists (select from pg_policy
                where polrelid = t and polname = 'sandbox_isolation') then
      execute format('drop policy sandbox_isolation on %s', t);
      perform {{platform}}.enable_tenant_rls(t);
    end if;
  end loop;
  for s in
    select n.nspname
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where c.relname = 'order_violations_by_sandbox' and c.relkind = 'i'
  loop
    execute format('alter index %I.order_violations_by_sandbox
                      rename to order_violations_by_tenant', s);
  end loop;
end $$;

create or replace function {{platform}}.create_inbox(s text) returns void
  language plpgsql
  as $$
begin
  execute format($ddl$
    -- One row per message id this receiver has seen, with the answer it gave
    -- (200 applied, 422 refused) so that a repeat gets the same answer.
    --
    -- aggregate_id, aggregate_version: the aggregate and version of what was
    -- applied, for the order watch (order_violations, below). A refusal's
    -- row (422) keeps none: it applied no version.
    --
    -- repeats: how many times the inbox answered a repeat from the stored
    -- answer (a redelivery after a lost acknowledgement, a redrive, a
    -- delivery sent twice), counted on the row the repeat found.
    create table %1$I.inbox (
      message_id uuid primary key,
      tenant_id uuid not null,
      type text not null,
      received_at timestamptz not null default now(),
      status int not null check (status in (200, 422)),
      outcome jsonb not null default '{}',
      aggregate_id text,
      aggregate_version int,
      repeats int not null default 0 check (repeats >= 0)
    );
    -- The highest version applied for an aggregate: one index probe per
    -- message received.
    create index inbox_by_aggregate on %1$I.inbox (aggregate_id, aggregate_version)
      where aggregate_id is not null;
    -- Retention's scan for rows past the replay horizon, in block ranges.
    create index inbox_received_by_time on %1$I.inbox using brin (received_at);

    -- Every instruction the receiver refused, and why.
    create table %1$I.refusals (
      id bigint generated always as identity primary key,
      tenant_id uuid not null,
      message_id uuid not null unique,
      type text not null,
      reason text not null,
      refused_at timestamptz not null default now()
    );

    -- The order watch: one row per message of an aggregate that arrived
    -- after a later version of the same aggregate was already applied here
    -- (a message is new to an inbox once, so it is noted once).
    create table %1$I.order_violations (
      id bigint generated always as identity primary key,
      tenant_id uuid not null,
      message_id uuid not null unique,
      type text not null,
      aggregate_id text not null,
      arrived_version int not null,
      applied_version int not null,
      at timestamptz not null default now(),
      check (applied_version > arrived_version)
    );
    create index order_violations_by_tenant on %1$I.order_violations (tenant_id, at);
  $ddl$, s);
  perform {{platform}}.enable_tenant_rls(format('%I.inbox', s)::regclass);
  perform {{platform}}.enable_tenant_rls(format('%I.refusals', s)::regclass);
  perform {{platform}}.enable_tenant_rls(format('%I.order_violations', s)::regclass);
end $$;
