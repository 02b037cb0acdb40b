-- The PostgreSQL queue: a message is stored once, and fans out into one
-- delivery per subscriber. Failed attempts are kept, and so is every
-- operator action on a delivery; a done delivery is audited once against
-- its subscriber's inbox (the closure audit). Every table carries
-- sandbox_id and the tenant policy.

create schema {{queue}};
grant usage on schema {{queue}} to console, queue, relay;
alter default privileges in schema {{queue}}
  grant select, insert, update, delete on tables to queue;
alter default privileges in schema {{queue}}
  grant usage, select on sequences to queue;
alter default privileges in schema {{queue}}
  grant select on tables to console;

-- Trigram search over delivery errors (the console's search).
create extension if not exists pg_trgm with schema {{platform}};

-- A message, once. Found by aggregate (a timeline) and by tenant, newest
-- first; its deliveries by message id, through their unique key.
create table {{queue}}.messages (
  message_id uuid primary key,
  sandbox_id uuid not null,
  source text not null,
  type text not null,
  aggregate_id text not null,
  envelope jsonb not null,
  published_at timestamptz not null default now()
);
create index messages_by_aggregate on {{queue}}.messages (aggregate_id);
create index messages_by_sandbox on {{queue}}.messages (sandbox_id, published_at);
create index messages_published_by_time on {{queue}}.messages
  using brin (published_at);
create trigger messages_immutable
  before update of envelope, message_id on {{queue}}.messages
  for each row execute function {{platform}}.forbid_envelope_change();

-- Delivery states (lib/queue/states.ts mirrors this CHECK):
--   pending   : due at next_attempt_at; a consumer's claim takes it.
--   in_flight : a consumer holds the lease until lease_expires_at.
--   done      : the subscriber answered 2xx. Final.
--   dead      : retries exhausted, or refused by the subscriber (422); an
--               operator redrives it (pending) or refuses it.
--   refused   : closed by an operator, with reason, actor and time. Final.
-- message_id has no foreign key to queue.messages: the statement that
-- stores a message stores its deliveries from its own rows.
create table {{queue}}.deliveries (
  id bigint generated always as identity primary key,
  sandbox_id uuid not null,
  message_id uuid not null,
  subscriber text not null,
  type text not null,
  aggregate_id text not null,
  state text not null default 'pending'
    check (state in ('pending', 'in_flight', 'done', 'dead', 'refused')),
  attempts int not null default 0,
  -- null: the consumers' default; a redrive grants one more attempt
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
  -- set by the closure audit once compared with the subscriber's inbox
  audited boolean not null default false,
  -- over JetStream: a redrive the broker has not been given again yet
  republish_at timestamptz,
  -- the last attempt: a delivery done at its first attempt has no row in
  -- queue.attempts, and these say when, how long and what answered
  last_started_at timestamptz,
  last_duration_ms int,
  -- how many times the broker was given this delivery's message again
  republishes integer not null default 0,
  unique (message_id, subscriber),
  check ((state = 'in_flight') = (lease_owner is not null)),
  check (state <> 'dead' or dead_at is not null),
  check ((state = 'refused') = (refused_at is not null and refused_reason is not null))
);
-- Each index costs every delivery written, so each holds only the rows its
-- readers look for. The consumers' work list leads with the tenant: claims
-- go round-robin across tenants.
create index deliveries_open on {{queue}}.deliveries (sandbox_id, id)
  where state in ('pending', 'in_flight');
create index deliveries_dead on {{queue}}.deliveries (sandbox_id, dead_at, id)
  where state = 'dead';
create index deliveries_unaudited on {{queue}}.deliveries (subscriber, id)
  where state = 'done' and not audited;
create index deliveries_refused on {{queue}}.deliveries (sandbox_id, refused_at, id)
  where state = 'refused';
create index deliveries_republish on {{queue}}.deliveries (republish_at)
  where republish_at is not null;
create index deliveries_done_by_time on {{queue}}.deliveries
  using brin (last_started_at);
create index deliveries_error_words on {{queue}}.deliveries
  using gin (last_error {{platform}}.gin_trgm_ops)
  where last_error is not null;

-- The relay stores messages and their deliveries, nothing else.
grant select, insert on {{queue}}.messages, {{queue}}.deliveries to relay;

-- Every attempt that failed, and every later one: when, how long, what
-- came back.
create table {{queue}}.attempts (
  id bigint generated always as identity primary key,
  sandbox_id uuid not null,
  delivery_id bigint not null references {{queue}}.deliveries (id),
  attempt int not null,
  started_at timestamptz not null,
  duration_ms int not null,
  status int,
  outcome text not null check (outcome in ('done', 'retry', 'dead')),
  error text
);
create index attempts_by_delivery on {{queue}}.attempts (delivery_id, id);
create index attempts_by_time on {{queue}}.attempts using brin (started_at);

-- What operators did to dead letters: redrive and refuse, with who and why.
create table {{queue}}.actions (
  id bigint generated always as identity primary key,
  sandbox_id uuid not null,
  delivery_id bigint not null references {{queue}}.deliveries (id),
  action text not null check (action in ('redrive', 'refuse')),
  actor text not null,
  reason text,
  at timestamptz not null default now()
);
create index actions_by_delivery on {{queue}}.actions (delivery_id, id);

-- The closure audit's counts: every audited delivery is either closed (its
-- subscriber's inbox has the message) or a mismatch.
create table {{queue}}.closure_counts (
  sandbox_id uuid not null,
  subscriber text not null,
  closed bigint not null default 0,
  mismatch bigint not null default 0,
  primary key (sandbox_id, subscriber)
);

-- An acknowledgement with no inbox row behind it: an alarm, kept.
create table {{queue}}.mismatches (
  delivery_id bigint primary key references {{queue}}.deliveries (id),
  sandbox_id uuid not null,
  subscriber text not null,
  message_id uuid not null,
  found_at timestamptz not null default now()
);

-- A dead letter replaced by a corrected copy: who, why, and which copy.
create table {{queue}}.supersessions (
  delivery_id bigint primary key references {{queue}}.deliveries (id),
  sandbox_id uuid not null,
  message_id uuid not null,
  actor text not null,
  reason text not null,
  at timestamptz not null default now()
);
create index supersessions_by_message on {{queue}}.supersessions (message_id);

-- Subscribers paused per tenant, and who paused and resumed them.
create table {{queue}}.pauses (
  sandbox_id uuid not null,
  subscriber text not null check (length(subscriber) between 1 and 80),
  paused boolean not null,
  actor text not null,
  updated_at timestamptz not null default now(),
  primary key (sandbox_id, subscriber)
);
create table {{queue}}.pause_actions (
  id bigint generated always as identity primary key,
  sandbox_id uuid not null,
  subscriber text not null,
  action text not null check (action in ('pause', 'resume')),
  actor text not null,
  at timestamptz not null default now()
);
create index pause_actions_by_sandbox on {{queue}}.pause_actions (sandbox_id, id);

-- Every attempt of a delivery: the failed ones have rows of their own, and
-- one done at its first try is read from the delivery itself.
create view {{queue}}.attempt_log with (security_invoker = true) as
  select a.id, a.sandbox_id, a.delivery_id, d.subscriber, a.attempt,
         a.started_at, a.duration_ms, a.status, a.outcome, a.error
    from {{queue}}.attempts a join {{queue}}.deliveries d on d.id = a.delivery_id
  union all
  select 0, d.sandbox_id, d.id, d.subscriber, 1, d.last_started_at,
         d.last_duration_ms, d.last_status, 'done', null
    from {{queue}}.deliveries d
   where d.last_started_at is not null and d.state = 'done'
     and d.attempts = 1;

select {{platform}}.enable_sandbox_rls(t::regclass) from unnest(array[
  '{{queue}}.messages', '{{queue}}.deliveries', '{{queue}}.attempts', '{{queue}}.actions',
  '{{queue}}.closure_counts', '{{queue}}.mismatches', '{{queue}}.supersessions',
  '{{queue}}.pauses', '{{queue}}.pause_actions'
]) as t;

-- Failures grouped by what they have in common: the error with its ids,
-- times and numbers taken out.
create function {{queue}}.error_pattern(error text) returns text
  language sql immutable parallel safe
  as $$
    select regexp_replace(regexp_replace(regexp_replace(coalesce(error, ''),
      '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}',
      '{id}', 'g'),
      '\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}(:?\d{2})?)?',
      '{time}', 'g'),
      '(?<!answered )(?<![\w.{])\d+(\.\d+)?', '{n}', 'g')
  $$;

-- A group's key: short, stable, and the same in every process.
create function {{queue}}.failure_group(subscriber text, type text, error text)
  returns text
  language sql immutable parallel safe
  as $$
    select left(md5(subscriber || E'\n' || type || E'\n'
                    || {{queue}}.error_pattern(error)), 16)
  $$;
grant execute on function {{queue}}.error_pattern(text),
  {{queue}}.failure_group(text, text, text) to console;
