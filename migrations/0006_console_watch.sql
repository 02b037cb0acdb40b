-- What the console watches beyond the queue's states: the order in which the
-- inboxes see an aggregate's versions, and the attempts of the last hour.

-- Every inbox keeps the aggregate and version of what it received, and notes
-- an order violation: a message of an aggregate that arrives after a later
-- version of the same aggregate was already applied there. The note is made
-- by the inbox's own insert (lib/inbox/receive.ts, receiveOnce), in the
-- receiver's transaction, so a repeat that rolls back notes nothing.
create function platform.add_order_watch(s text) returns void
  language plpgsql
  as $$
begin
  execute format($ddl$
    alter table %1$I.inbox add column aggregate_id text,
      add column aggregate_version int;
    -- The highest version applied for an aggregate: one index probe per
    -- message received. Rows from before this migration have no aggregate.
    create index inbox_by_aggregate on %1$I.inbox (aggregate_id, aggregate_version)
      where aggregate_id is not null;
    -- One row per message that arrived behind a later version (a message is
    -- new to an inbox once, so it is noted once).
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
  perform platform.enable_sandbox_rls(format('%I.order_violations', s)::regclass);
end $$;

-- A new inbox, whole: platform.create_inbox (whichever migration defined it
-- last) and the watch, as platform.create_outbox_with_indexes makes an
-- outbox. receiveOnce writes the watch's columns, so every inbox it serves
-- needs them.
create function platform.create_inbox_with_watch(s text) returns void
  language plpgsql
  as $$
begin
  perform platform.create_inbox(s);
  perform platform.add_order_watch(s);
end $$;

select platform.add_order_watch(s) from unnest(array['orders', 'kitchen',
  'schedule', 'dispatch', 'crm', 'customers', 'receipts']) as s;

-- The receivers page reads the attempts of the last hour. Attempts are
-- written in time order, so a block range index finds that hour for a few
-- pages of index and almost no cost per insert (a btree would add an entry
-- to every attempt the consumers write).
create index attempts_by_time on queue.attempts using brin (started_at);
