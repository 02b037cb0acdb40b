-- Outboxes (senders) and inboxes with their refusals and order watch
-- (receivers). They are the same shape in every service, so they are made
-- by functions: platform.create_outbox_with_indexes(schema) and
-- platform.create_inbox(schema) (0004_bakery.sql and 0007_labs.sql call them
-- for the services; tests call the same for their own small sender and
-- receivers).

-- A stored envelope is immutable: a retry sends exactly what was stored.
create function platform.forbid_envelope_change() returns trigger
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

-- The outbox table and its loop guard. A new outbox is made with
-- platform.create_outbox_with_indexes (below), which adds what the relay
-- needs; this makes the tables alone.
create function platform.create_outbox(s text) returns void
  language plpgsql
  as $$
begin
  -- Outbox row states (lib/outbox/states.ts mirrors this CHECK):
  --   pending   : waiting to be published; the relay claims it once
  --               next_attempt_at has come. Moved out by the relay's claim.
  --   claimed   : a relay holds the lease until lease_expires_at (which is
  --               also next_attempt_at, so an expired lease is simply due
  --               again). Moved out by that relay: to published after the
  --               queue has the message, back to pending after a failed
  --               publish; or by another relay's claim once the lease expired.
  --   published : the queue has the message. Final.
  execute format($ddl$
    create table %1$I.outbox (
      id bigint generated always as identity primary key,
      sandbox_id uuid not null,
      message_id uuid not null unique,
      type text not null,
      envelope jsonb not null,
      state text not null default 'pending'
        check (state in ('pending', 'claimed', 'published')),
      attempts int not null default 0,
      last_error text,
      created_at timestamptz not null default now(),
      next_attempt_at timestamptz not null default now(),
      lease_owner text,
      lease_expires_at timestamptz,
      published_at timestamptz,
      check ((state = 'published') = (published_at is not null)),
      check ((state = 'claimed') = (lease_owner is not null))
    );
    -- The relay's work list: only unpublished rows, oldest first.
    create index outbox_unpublished on %1$I.outbox (id)
      where state <> 'published';
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

-- The envelope check, fired only when an update names the envelope or the
-- message id: it still refuses every change to them, but no longer runs for
-- every update of every row (claim, mark, retry), none of which sets the
-- envelope. Replaces the broader trigger of the same name that
-- platform.create_outbox makes.
create function platform.guard_envelope(t regclass, trigger_name text)
  returns void
  language plpgsql
  as $$
begin
  execute format('drop trigger if exists %I on %s', trigger_name, t);
  execute format(
    'create trigger %I before update of envelope, message_id on %s
       for each row execute function platform.forbid_envelope_change()',
    trigger_name, t);
end $$;

-- outbox_retry serves the flush of a command (lib/outbox/append.ts: this
-- sandbox's rows that wait for a retry or were parked), which was a scan of
-- every unpublished row per command. Only a failed publish makes a pending
-- row wait (attempts > 0, next attempt later), so the index holds only
-- those: usually none, and a new outbox row writes no entry into it.
--
-- No index answers "when is the next row due?" (an outbox_next_due on
-- next_attempt_at cost an entry for every row written, a tenth of a relay
-- batch's time, measured). That is asked only when nothing is due, and by
-- then the unpublished rows are the few waiting for a retry or held by a
-- lease, read through outbox_unpublished.
create function platform.add_outbox_indexes(s text) returns void
  language plpgsql
  as $$
begin
  execute format(
    'create index outbox_retry on %I.outbox (sandbox_id, next_attempt_at)
       where state = ''pending'' and attempts > 0', s);
end $$;

-- What an outbox needs beyond its table: the relay's rights (it reads and
-- marks outbox rows, nothing else; 0003_queue.sql) and the narrower trigger.
create function platform.open_outbox_to_relay(s text) returns void
  language plpgsql
  as $$
begin
  execute format('grant usage on schema %I to relay', s);
  execute format('grant select, update on %I.outbox to relay', s);
  perform platform.guard_envelope(format('%I.outbox', s)::regclass,
    'outbox_immutable');
end $$;

-- A new outbox, whole: the services' and the tests' own.
create function platform.create_outbox_with_indexes(s text) returns void
  language plpgsql
  as $$
begin
  perform platform.create_outbox(s);
  perform platform.add_outbox_indexes(s);
  perform platform.open_outbox_to_relay(s);
end $$;

-- A new inbox, whole: the services' and the tests' receivers. Every part of
-- it is written by lib/inbox/receive.ts (receiveOnce), in the receiver's own
-- transaction.
create function platform.create_inbox(s text) returns void
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
  perform platform.enable_sandbox_rls(format('%I.inbox', s)::regclass);
  perform platform.enable_sandbox_rls(format('%I.refusals', s)::regclass);
  perform platform.enable_sandbox_rls(format('%I.order_violations', s)::regclass);
end $$;
