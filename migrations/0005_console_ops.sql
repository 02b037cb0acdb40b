-- Operator tools on dead letters: failure groups (a pattern of each last
-- error), bulk actions that run as jobs, one row for every operator action,
-- the link from a superseded dead letter to its corrected copy, and the
-- indexes of the console's search. Every table carries sandbox_id and the
-- sandbox policy.

-- The pattern of an error, for grouping failures: ids, times and numbers
-- become placeholders, so "Kitchen answered 409: no card for order 0190..."
-- and the same for another order fall in one group. The status that follows
-- "answered" is kept: a 409 and a 503 are different failures.
create function queue.error_pattern(error text) returns text
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
create function queue.failure_group(subscriber text, type text, error text)
  returns text
  language sql immutable parallel safe
  as $$
    select left(md5(subscriber || E'\n' || type || E'\n'
                    || queue.error_pattern(error)), 16)
  $$;
grant execute on function queue.error_pattern(text),
  queue.failure_group(text, text, text) to console;

-- Bulk job states (services/console/jobs.ts mirrors this CHECK):
--   running   : rows left to act on. Moved out by the job loop that holds
--               the lease (done, once every id was taken), or by an
--               operator's cancel (cancelled).
--   done      : every id was acted on (or had been closed meanwhile). Final.
--   cancelled : an operator stopped it; what it did stays done. Final.
--
-- The ids are chosen when the operator asks, oldest first, so the job acts
-- on what the dry run counted, not on dead letters that arrived later.
-- `done` is how many of them have been taken; `changed` how many of those
-- were still dead letters and were acted on.
create table queue.bulk_jobs (
  id uuid primary key,
  sandbox_id uuid not null,
  action text not null check (action in ('redrive', 'refuse')),
  ids bigint[] not null,
  total int not null check (total = cardinality(ids)),
  done int not null default 0 check (done between 0 and total),
  changed int not null default 0,
  rate_per_second int not null check (rate_per_second between 1 and 1000),
  reason text,
  force boolean not null default false,
  republish boolean not null default false,
  actor text not null,
  state text not null default 'running'
    check (state in ('running', 'done', 'cancelled')),
  lease_owner text,
  lease_expires_at timestamptz,
  next_run_at timestamptz not null default now(),
  created_at timestamptz not null default now(),
  finished_at timestamptz,
  check ((state = 'running') = (finished_at is null)),
  check (action <> 'refuse' or reason is not null)
);
-- The job loop's work list: running jobs only.
create index bulk_jobs_running on queue.bulk_jobs (next_run_at)
  where state = 'running';

-- Who did what to dead letters, when, and to how many: one row per
-- operator action (a redrive or refusal of one or many, a job started or
-- cancelled, a supersede). queue.actions keeps the same per delivery.
create table queue.operator_actions (
  id bigint generated always as identity primary key,
  sandbox_id uuid not null,
  actor text not null,
  action text not null
    check (action in ('redrive', 'refuse', 'supersede', 'cancel')),
  target jsonb not null,
  count int not null check (count >= 0),
  job_id uuid,
  at timestamptz not null default now()
);
create index operator_actions_by_sandbox on queue.operator_actions
  (sandbox_id, at);

-- A dead letter closed by a corrected copy of its payload, sent under a new
-- message id to the same subscriber. The original envelope is left as it
-- was; this row is the link.
create table queue.supersessions (
  delivery_id bigint primary key references queue.deliveries (id),
  sandbox_id uuid not null,
  message_id uuid not null,
  actor text not null,
  reason text not null,
  at timestamptz not null default now()
);
create index supersessions_by_message on queue.supersessions (message_id);

select platform.enable_sandbox_rls(t::regclass) from unnest(array[
  'queue.bulk_jobs', 'queue.operator_actions', 'queue.supersessions'
]) as t;

-- Search ----------------------------------------------------------------
-- The console's one box finds an order by its id, its short number (the
-- last six hex digits, services: orderNumber), its receipt's number or its
-- customer's email; a message by its id; a delivery by its id or by words
-- of its last error. Ids are primary keys already; the rest gets an index
-- each, so a search is a handful of index look-ups whatever the history.
create extension if not exists pg_trgm with schema platform;

-- The console reads orders as a role under the sandbox policy, and
-- PostgreSQL evaluates the policy before any condition that calls a
-- function not marked leakproof (upper, lower, right, LIKE): such a
-- condition cannot be an index condition, and a search by short number
-- read every order (0.3 to 0.6 s with a million, bench console). So the
-- searched forms are stored columns, compared with = and ^@ (leakproof),
-- each with its index. The short number: six hex digits of a random id, a
-- handful of orders share one across every sandbox. The email within the
-- sandbox: one customer may have many orders there. They cost every order
-- placed two columns and two index entries (and the daily wipe their
-- deletes); the search is what the console's operators ask for most.
alter table orders.orders
  add column number text generated always as (upper(right(id::text, 6))) stored,
  add column email_key text generated always as (lower(customer_email)) stored;
create index orders_by_number on orders.orders (number);
create index orders_by_email on orders.orders
  (sandbox_id, email_key text_pattern_ops);
-- Receipt numbers are upper case already (R-20261201-61B797).
create index receipts_by_number on receipts.receipts (number);
-- Words of an error: trigrams, only of deliveries that have an error (most
-- of history succeeded at the first attempt and has none).
create index deliveries_error_words on queue.deliveries
  using gin (last_error platform.gin_trgm_ops)
  where last_error is not null;
