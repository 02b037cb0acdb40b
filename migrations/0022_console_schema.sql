-- The console's own bookkeeping moves out of the queue's schema into a
-- schema of its own, `console`, in the same database: its bulk jobs
-- (0005_console_ops.sql), its operator log (0005, 0013_release_parked.sql,
-- 0021_alert_episodes.sql) and its alert episodes (0021). The queue's
-- schema is then the messaging ledger alone, which only lib/ledger writes.
-- The tables stay beside the queue on purpose: a bulk job names deliveries
-- by id, and an action commits with its line in the log.
--
-- SET SCHEMA moves each table with its rows, indexes, constraints, identity
-- sequence, row-level security, policy and grants. The roles keep what they
-- had: the queue's role writes all three, the relay adds a line to the log
-- when it releases parked rows, and the console reads. Tables made here
-- later get the same through the default privileges.

create schema console;
grant usage on schema console to console, queue, relay;
alter default privileges in schema console
  grant select, insert, update, delete on tables to queue;
alter default privileges in schema console
  grant usage, select on sequences to queue;
alter default privileges in schema console
  grant select on tables to console;

alter table queue.bulk_jobs set schema console;
alter table queue.operator_actions set schema console;
alter table queue.alert_episodes set schema console;
