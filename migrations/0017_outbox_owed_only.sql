-- An outbox holds only what its service still owes. The relay deletes a row
-- in the transaction that stores the message's durable copy, queue.messages
-- (over JetStream too: the ledger republishes from it). So the message id
-- is the primary key, and the table is the relay's work list as it stands:
-- no partial index on unpublished rows and no second unique index, which
-- were most of what an outbox row cost an order (bench/HISTORY.md).
--
-- `id` stays, without an index: it orders a relay's batch oldest first, and
-- the work list is short.

-- Row states (lib/outbox/states.ts mirrors this CHECK):
--   pending : waiting to be published; the relay claims it once
--             next_attempt_at has come.
--   claimed : a relay holds the lease until lease_expires_at (also
--             next_attempt_at, so an expired lease is simply due again).
--             That relay deletes the row once the queue has the message,
--             or puts it back to pending after a failed publish; another
--             relay takes it over once the lease expired.
create or replace function platform.create_outbox(s text) returns void
  language plpgsql
  as $$
begin
  execute format($ddl$
    create table %1$I.outbox (
      id bigint generated always as identity,
      sandbox_id uuid not null,
      message_id uuid primary key,
      type text not null,
      envelope jsonb not null,
      state text not null default 'pending'
        check (state in ('pending', 'claimed')),
      attempts int not null default 0,
      last_error text,
      created_at timestamptz not null default now(),
      next_attempt_at timestamptz not null default now(),
      lease_owner text,
      lease_expires_at timestamptz,
      check ((state = 'claimed') = (lease_owner is not null))
    );
    create trigger outbox_immutable before update on %1$I.outbox
      for each row execute function platform.forbid_envelope_change();

    -- The loop guard: automatic re-arms after a failed publish, per sandbox
    -- and UTC day.
    create table %1$I.relay_guard (
      sandbox_id uuid not null,
      day date not null,
      rearms int not null default 0,
      primary key (sandbox_id, day)
    );
  $ddl$, s);
  perform platform.enable_sandbox_rls(format('%I.outbox', s)::regclass);
  perform platform.enable_sandbox_rls(format('%I.relay_guard', s)::regclass);
end $$;

-- The relay now deletes what it published.
create or replace function platform.open_outbox_to_relay(s text) returns void
  language plpgsql
  as $$
begin
  execute format('grant usage on schema %I to relay', s);
  execute format('grant select, update, delete on %I.outbox to relay', s);
  perform platform.guard_envelope(format('%I.outbox', s)::regclass,
    'outbox_immutable');
end $$;

-- An existing outbox, moved over: its published rows go to queue.messages
-- (where the relay's move put them already, unless they were published
-- some other way), then leave the outbox; its constraints and indexes
-- become the new table's. Nothing is lost: a published row missing from
-- the queue is copied before any row is deleted.
create function platform.outbox_to_owed_only(s text) returns void
  language plpgsql
  as $$
declare
  c record;
  copied int;
  deleted int;
begin
  execute format($q$
    insert into queue.messages
      (message_id, sandbox_id, source, type, aggregate_id, envelope,
       published_at)
    select message_id, sandbox_id, %1$L, type,
           coalesce(envelope->>'aggregateId', ''), envelope, published_at
      from %1$I.outbox where state = 'published'
    on conflict (message_id) do nothing$q$, s);
  get diagnostics copied = row_count;
  execute format('delete from %I.outbox where state = ''published''', s);
  get diagnostics deleted = row_count;
  raise notice '%.outbox: % published rows left for queue.messages (% copied)',
    s, deleted, copied;
  for c in
    select conname from pg_constraint
     where conrelid = format('%I.outbox', s)::regclass
       and contype in ('c', 'u', 'p')
  loop
    execute format('alter table %I.outbox drop constraint %I', s, c.conname);
  end loop;
  execute format('drop index if exists %I.outbox_unpublished', s);
  execute format('drop index if exists %I.outbox_by_aggregate', s);
  execute format($ddl$
    alter table %1$I.outbox
      drop column published_at,
      add primary key (message_id),
      add check (state in ('pending', 'claimed')),
      add check ((state = 'claimed') = (lease_owner is not null))
  $ddl$, s);
  perform platform.open_outbox_to_relay(s);
end $$;

do $$
declare
  t record;
begin
  for t in
    select table_schema from information_schema.tables
     where table_name = 'outbox' and table_type = 'BASE TABLE'
       and table_schema not in ('bench')
     order by table_schema
  loop
    perform platform.outbox_to_owed_only(t.table_schema);
  end loop;
end $$;
