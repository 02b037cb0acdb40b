-- Paused receivers, per sandbox. While a (sandbox, subscriber) pair is
-- paused its deliveries wait as they are (pending, no attempt, never dead):
-- the consumers' claim leaves them, the relay hands none of them over, and a
-- JetStream consumer gives their messages back to the broker unattempted
-- (lib/queue/pauses.ts). One row per pair ever paused; resuming keeps the
-- row with paused = false.
create table queue.pauses (
  sandbox_id uuid not null,
  subscriber text not null check (length(subscriber) between 1 and 80),
  paused boolean not null,
  actor text not null,
  updated_at timestamptz not null default now(),
  primary key (sandbox_id, subscriber)
);

-- Who paused or resumed which receiver, and when: one row per change, kept.
create table queue.pause_actions (
  id bigint generated always as identity primary key,
  sandbox_id uuid not null,
  subscriber text not null,
  action text not null check (action in ('pause', 'resume')),
  actor text not null,
  at timestamptz not null default now()
);
create index pause_actions_by_sandbox on queue.pause_actions (sandbox_id, id);

select platform.enable_sandbox_rls(t::regclass) from unnest(array[
  'queue.pauses', 'queue.pause_actions'
]) as t;
