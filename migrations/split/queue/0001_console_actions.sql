-- What the console keeps beside a queue, in every database of split mode
-- that holds one: its bulk redrives and refusals, and who did what to dead
-- letters. 0005_console_ops.sql explains both tables; a bulk job names
-- deliveries by id, so it lives beside the queue that holds them.

create table queue.bulk_jobs (
  id uuid primary key,
  tenant_id uuid not null,
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
create index bulk_jobs_running on queue.bulk_jobs (next_run_at)
  where state = 'running';

create table queue.operator_actions (
  id bigint generated always as identity primary key,
  tenant_id uuid not null,
  actor text not null,
  action text not null check (
    action in ('redrive', 'refuse', 'supersede', 'cancel', 'release')),
  target jsonb not null,
  count int not null check (count >= 0),
  job_id uuid,
  at timestamptz not null default now()
);
create index operator_actions_by_tenant on queue.operator_actions
  (tenant_id, at);
grant insert on queue.operator_actions to relay;

select platform.enable_tenant_rls(t::regclass) from unnest(array[
  'queue.bulk_jobs', 'queue.operator_actions'
]) as t;
