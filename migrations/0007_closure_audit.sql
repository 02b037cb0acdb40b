-- Closure without scanning history. A delivery that is done is audited once
-- against its subscriber's inbox (lib/queue/audit.ts): accepted or
-- mismatch. The counts of audited deliveries live in closure_counts; each
-- mismatch is a row. The console then reads counters, the few unaudited
-- done deliveries, and the open, dead and refused ones, each through an
-- index that holds only those rows.

alter table queue.deliveries add column audited boolean not null default false;

create index deliveries_unaudited on queue.deliveries (id)
  where state = 'done' and not audited;
create index deliveries_refused on queue.deliveries (sandbox_id, refused_at, id)
  where state = 'refused';

create table queue.closure_counts (
  sandbox_id uuid not null,
  subscriber text not null,
  closed bigint not null default 0,
  mismatch bigint not null default 0,
  primary key (sandbox_id, subscriber)
);

-- An acknowledgement with no inbox row behind it: an alarm, kept.
create table queue.mismatches (
  delivery_id bigint primary key references queue.deliveries (id),
  sandbox_id uuid not null,
  subscriber text not null,
  message_id uuid not null,
  found_at timestamptz not null default now()
);

select platform.enable_sandbox_rls(t::regclass) from unnest(array[
  'queue.closure_counts', 'queue.mismatches'
]) as t;
