-- A delivery done at its first attempt leaves no row in queue.attempts:
-- its own row says when that attempt started, how long it took (here) and
-- what answered (last_status, done_at). Attempts that failed, and every
-- attempt after a failure or a redrive, keep their rows as before. The
-- console derives the missing first attempts from these columns
-- (services/console/attempts.ts). An attempt row per success was a fifth
-- of what the finish statement cost (bench/HISTORY.md).
alter table queue.deliveries
  add column last_started_at timestamptz,
  add column last_duration_ms int;

-- The receivers' last hour reads first-try successes by time, as it reads
-- the attempts (attempts_by_time, 0006_console_watch.sql). A block range
-- index: rows are finished in about the order they were made, and since
-- PostgreSQL 16 it does not keep an update from being HOT.
create index deliveries_done_by_time on queue.deliveries
  using brin (last_started_at);

-- Every attempt, whichever way it was kept: the rows of queue.attempts, and
-- the first-try successes told by their delivery's row (id 0). What the
-- console counts and lists. security_invoker: read with the reader's rights
-- and row-level security, as the tables themselves are.
create view queue.attempt_log with (security_invoker = true) as
  select a.id, a.sandbox_id, a.delivery_id, d.subscriber, a.attempt,
         a.started_at, a.duration_ms, a.status, a.outcome, a.error
    from queue.attempts a join queue.deliveries d on d.id = a.delivery_id
  union all
  select 0, d.sandbox_id, d.id, d.subscriber, 1, d.last_started_at,
         d.last_duration_ms, d.last_status, 'done', null
    from queue.deliveries d
   where d.last_started_at is not null and d.state = 'done'
     and d.attempts = 1;
