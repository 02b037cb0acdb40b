-- The inbox: a receiver's record of every message id it has seen, with the
-- answer it gave, written in the same transaction as the effect
-- (lib/inbox/receive.ts). Every receiver's inbox has the same shape, so it
-- is made by a function that takes the receiver's schema:
-- platform.create_inbox(schema).
create function {{platform}}.create_inbox(s text) returns void
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
    -- answer (a message id it already had came again: a redelivery after a
    -- lost acknowledgement, a redrive, a delivery sent twice). Counted on the
    -- row where the repeat is recognised, so "applied once" can be shown
    -- with its count of repeats (the How it's built page reads it).
    create table %1$I.inbox (
      message_id uuid primary key,
      sandbox_id uuid not null,
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

    -- Every instruction the receiver refused, and why.
    create table %1$I.refusals (
      id bigint generated always as identity primary key,
      sandbox_id uuid not null,
      message_id uuid not null unique,
      type text not null,
      reason text not null,
      refused_at timestamptz not null default now()
    );

    -- The order watch: one row per message of an aggregate that arrived
    -- after a later version of the same aggregate was already applied here
    -- (a message is new to an inbox once, so it is noted once). The note is
    -- made by the inbox's own insert, so a repeat that rolls back notes
    -- nothing; the console's order violations read it.
    create table %1$I.order_violations (
      id bigint generated always as identity primary key,
      sandbox_id uuid not null,
      message_id uuid not null unique,
      type text not null,
      aggregate_id text not null,
      arrived_version int not null,
      applied_version int not null,
      at timestamptz not null default now(),
      check (applied_version > arrived_version)
    );
    create index order_violations_by_sandbox on %1$I.order_violations (sandbox_id, at);
  $ddl$, s);
  perform {{platform}}.enable_sandbox_rls(format('%I.inbox', s)::regclass);
  perform {{platform}}.enable_sandbox_rls(format('%I.refusals', s)::regclass);
  perform {{platform}}.enable_sandbox_rls(format('%I.order_violations', s)::regclass);
end $$;
