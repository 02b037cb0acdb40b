-- The workers' heartbeat: one row per running process of relays or
-- consumers, written by its Messaging object (lib/workers/heartbeat.ts)
-- every beat_ms and deleted when it stops cleanly. A row whose beat is
-- older than three of its own beats is silent: the process died, hung or
-- lost its database. Workers are shared by every tenant, so the table has
-- no tenant column and no tenant policy. Rows silent for a hundred beats
-- are deleted by the beat of any other worker.
create table {{queue}}.workers (
  id text primary key check (length(id) between 1 and 200),
  host text not null check (length(host) <= 255),
  pid integer not null check (pid > 0),
  roles text[] not null check (roles <@ array['relay', 'consume']::text[]),
  transport text not null check (length(transport) between 1 and 40),
  version text not null check (length(version) between 1 and 80),
  -- What it held at its last beat, and the latest expiry among those
  -- leases: past it, its rows are free for another worker to take over.
  leases integer not null default 0 check (leases >= 0),
  leases_until timestamptz,
  last_claim_at timestamptz,
  started_at timestamptz not null default now(),
  last_beat_at timestamptz not null default now(),
  beat_ms integer not null check (beat_ms > 0)
);
grant select, insert, update, delete on {{queue}}.workers to queue;
grant select on {{queue}}.workers to console;
