-- The console's bulk jobs, operator log and alert episodes leave the
-- queue's schema for a schema of their own, `console`, in every database
-- of split mode that holds a queue, as ../../0022_console_schema.sql does
-- in the shared database: that file explains it.

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
