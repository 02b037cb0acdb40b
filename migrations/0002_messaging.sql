-- The messaging core: outboxes (senders), inboxes and refusals (receivers),
-- the queue (messages, deliveries, attempts, operator actions) and faults.
--
-- Outbox and inbox tables are the same shape in every service, so they are
-- made by two functions: platform.create_outbox(schema) and
-- platform.create_inbox(schema). Tests call the same functions for their own
-- small sender and receivers.

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

create function platform.create_inbox(s text) returns void
  language plpgsql
  as $$
begin
  execute format($ddl$
    -- One row per message id this receiver has seen, with the answer it gave
    -- (200 applied, 422 refused) so that a repeat gets the same answer.
    create table %1$I.inbox (
      message_id uuid primary key,
      sandbox_id uuid not null,
      type text not null,
      received_at timestamptz not null default now(),
      status int not null check (status in (200, 422)),
      outcome jsonb not null default '{}'
    );
    -- Every instruction the receiver refused, and why.
    create table %1$I.refusals (
      id bigint generated always as identity primary key,
      sandbox_id uuid not null,
      message_id uuid not null unique,
      type text not null,
      reason text not null,
      refused_at timestamptz not null default now()
    );
  $ddl$, s);
  perform platform.enable_sandbox_rls(format('%I.inbox', s)::regclass);
  perform platform.enable_sandbox_rls(format('%I.refusals', s)::regclass);
end $$;

select platform.create_outbox('orders');
select platform.create_outbox('billing');
select platform.create_inbox(s) from unnest(array['orders', 'kitchen',
  'schedule', 'dispatch', 'crm', 'customers', 'receipts']) as s;

-- The queue. A message is stored once; publishing fans it out into one
-- delivery per subscriber.
create table queue.messages (
  message_id uuid primary key,
  sandbox_id uuid not null,
  source text not null,
  type text not null,
  aggregate_id text not null,
  envelope jsonb not null,
  published_at timestamptz not null default now()
);
create trigger messages_immutable before update on queue.messages
  for each row execute function platform.forbid_envelope_change();

-- Delivery states (lib/queue/states.ts mirrors this CHECK):
--   pending   : due at next_attempt_at. Moved out by a consumer's claim.
--   in_flight : a consumer holds the lease until lease_expires_at (also
--               next_attempt_at: an expired lease is due again). Moved out by
--               that consumer: to done, back to pending for a retry, or to
--               dead; or by another consumer's claim once the lease expired.
--   done      : the subscriber answered 2xx. Final.
--   dead      : retries exhausted, or refused by the subscriber (422). Moved
--               out by an operator: redrive (to pending) or refuse.
--   refused   : closed by an operator, with reason, actor and time. Final.
create table queue.deliveries (
  id bigint generated always as identity primary key,
  sandbox_id uuid not null,
  message_id uuid not null references queue.messages (message_id),
  subscriber text not null,
  type text not null,
  aggregate_id text not null,
  state text not null default 'pending'
    check (state in ('pending', 'in_flight', 'done', 'dead', 'refused')),
  attempts int not null default 0,
  -- null: the consumers' default (1 + the number of retry delays). A redrive
  -- grants one more attempt: max_attempts = attempts + 1.
  max_attempts int,
  created_at timestamptz not null default now(),
  next_attempt_at timestamptz not null default now(),
  lease_owner text,
  lease_expires_at timestamptz,
  last_status int,
  last_error text,
  done_at timestamptz,
  dead_at timestamptz,
  redrives int not null default 0,
  refused_reason text,
  refused_by text,
  refused_at timestamptz,
  unique (message_id, subscriber),
  check ((state = 'in_flight') = (lease_owner is not null)),
  check (state <> 'dead' or dead_at is not null),
  check ((state = 'refused') = (refused_at is not null and refused_reason is not null))
);
-- The consumers' work list: open deliveries only, oldest first.
create index deliveries_open on queue.deliveries (id)
  where state in ('pending', 'in_flight');
-- The dead letter list, per sandbox, oldest first.
create index deliveries_dead on queue.deliveries (sandbox_id, dead_at, id)
  where state = 'dead';
create index deliveries_by_aggregate on queue.deliveries (sandbox_id, aggregate_id);

-- Every attempt, kept: when, how long, what came back.
create table queue.attempts (
  id bigint generated always as identity primary key,
  sandbox_id uuid not null,
  delivery_id bigint not null references queue.deliveries (id),
  attempt int not null,
  started_at timestamptz not null,
  duration_ms int not null,
  status int,
  outcome text not null check (outcome in ('done', 'retry', 'dead')),
  error text
);
create index attempts_by_delivery on queue.attempts (delivery_id, id);

-- What operators did to dead letters: redrive and refuse, with who and why.
create table queue.actions (
  id bigint generated always as identity primary key,
  sandbox_id uuid not null,
  delivery_id bigint not null references queue.deliveries (id),
  action text not null check (action in ('redrive', 'refuse')),
  actor text not null,
  reason text,
  at timestamptz not null default now()
);
create index actions_by_delivery on queue.actions (delivery_id, id);

select platform.enable_sandbox_rls(t::regclass) from unnest(array[
  'queue.messages', 'queue.deliveries', 'queue.attempts', 'queue.actions'
]) as t;

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
