-- The daily sandbox wipe: one row per wipe (the 10:00 UTC boundary it wipes
-- up to). A row without finished_at is an unfinished wipe, retried by the
-- 15-minute schedule.
create table platform.wipes (
  cutoff timestamptz primary key,
  started_at timestamptz not null default now(),
  finished_at timestamptz,
  sandboxes int not null default 0,
  rows_deleted bigint not null default 0,
  error text
);
