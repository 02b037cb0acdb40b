-- The queue: a message is stored once; publishing fans it out into one
-- delivery per subscriber. Every attempt is kept, and so is every operator
-- action on a dead letter; a done delivery is audited once against its
-- subscriber's inbox (the closure audit). Every table carries sandbox_id
-- and the sandbox policy.

-- The relay, a role of its own (made in 0001_platform.sql). With the queue in
-- the same database as the outboxes, moving a batch is one transaction: mark
-- the rows published and store their messages and deliveries together, so
-- there is no window in which the queue has a message its outbox row does
-- not know about (no lease, no second update of each row, no envelope sent
-- to the program and back). The relay may read and mark outbox rows
-- (platform.open_outbox_to_relay) and add to the queue; nothing else.
-- Sandbox policies still apply; relays work for every sandbox.
grant usage on schema platform, queue to relay;
grant select on platform.faults to relay;

-- Messages are found by order (aggregate_id: the order timeline, a console
-- filter) and by sandbox, newest first (the console's list of a sandbox's
-- deliveries, and the closure's done ones), and then their deliveries by
-- message id through the unique index on (message_id, subscriber). One
-- index entry per message does what an index on the deliveries did with
-- one entry per delivery, three to six per message; and an index on the
-- deliveries also paid an entry for each state change (a claim, a finish
-- and the audit each write a new row version, none of them HOT, since the
-- state is in the partial indexes' predicates): four row versions each.
create table queue.messages (
  message_id uuid primary key,
  sandbox_id uuid not null,
  source text not null,
  type text not null,
  aggregate_id text not null,
  envelope jsonb not null,
  published_at timestamptz not null default now()
);
create index messages_by_aggregate on queue.messages (aggregate_id);
create index messages_by_sandbox on queue.messages (sandbox_id, published_at);
-- A stored envelope is immutable (platform.guard_envelope says why only an
-- update that names it fires this).
create trigger messages_immutable
  before update of envelope, message_id on queue.messages
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
--
-- message_id has no foreign key to queue.messages: checked for every
-- delivery inserted, it cost a fifth of a relay batch's time (measured).
-- Deliveries are inserted only by the statement that inserts their
-- message, from that statement's own rows (lib/queue/publish.ts), and
-- messages are deleted only by the sandbox wipe, after their deliveries.
-- The tests check that no delivery is without its message.
create table queue.deliveries (
  id bigint generated always as identity primary key,
  sandbox_id uuid not null,
  message_id uuid not null,
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
  -- set by the closure audit (lib/queue/audit.ts) once a done delivery has
  -- been compared with its subscriber's inbox
  audited boolean not null default false,
  -- A redrive over the JetStream transport: the delivery is pending again
  -- in PostgreSQL, and the broker must be given its message again,
  -- addressed to that delivery's subscriber only. Set by the redrive in the
  -- same transaction, taken by the transport's republisher (set ahead
  -- while it publishes, a lease), and cleared once JetStream has
  -- acknowledged the publish. Over the PostgreSQL queue it stays null: the
  -- consumers claim pending rows themselves.
  republish_at timestamptz,
  unique (message_id, subscriber),
  check ((state = 'in_flight') = (lease_owner is not null)),
  check (state <> 'dead' or dead_at is not null),
  check ((state = 'refused') = (refused_at is not null and refused_reason is not null))
);
-- Each index entry costs every delivery written, three to six per message,
-- so each index holds only the rows its readers look for.
--
-- The consumers' work list: open deliveries only. They claim round-robin
-- across sandboxes (lib/queue/deliveries_sql.ts): they walk the sandboxes
-- that have open deliveries and take each one's oldest due deliveries, so
-- the index leads with the sandbox, and both the walk and each sandbox's
-- oldest rows are index lookups. (Oldest first across all sandboxes let
-- one sandbox's backlog hold up every other's: a quiet sandbox's paid
-- order waited 50 s behind another's slow kitchen.) No index answers "when
-- is the next delivery due?": asked only when nothing is due, it is
-- answered from the few open rows left, through this one.
create index deliveries_open on queue.deliveries (sandbox_id, id)
  where state in ('pending', 'in_flight');
-- The dead letter list, per sandbox, oldest first.
create index deliveries_dead on queue.deliveries (sandbox_id, dead_at, id)
  where state = 'dead';
-- Closure without scanning history: the audit's work list (done, not yet
-- audited), and the refused list per sandbox. The console then reads the
-- closure counters, the few unaudited done deliveries, and the open, dead
-- and refused ones, each through an index that holds only those rows.
create index deliveries_unaudited on queue.deliveries (id)
  where state = 'done' and not audited;
create index deliveries_refused on queue.deliveries (sandbox_id, refused_at, id)
  where state = 'refused';
-- The JetStream republisher's work list: redrives not yet handed back.
create index deliveries_republish on queue.deliveries (republish_at)
  where republish_at is not null;

grant select, insert on queue.messages, queue.deliveries to relay;

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

-- The closure audit's counts (lib/queue/audit.ts): every audited delivery
-- is either closed (its subscriber's inbox has the message) or a mismatch.
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
  'queue.messages', 'queue.deliveries', 'queue.attempts', 'queue.actions',
  'queue.closure_counts', 'queue.mismatches'
]) as t;
