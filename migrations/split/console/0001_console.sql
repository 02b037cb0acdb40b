-- The web app's and the console's own database in split mode: sign-in
-- sessions and the daily wipes, as 0001_platform.sql and
-- 0011_sandbox_wipe.sql made them in the shared database, where both are
-- explained. The tenants' registry here is the one sessions belong to.

create table platform.sessions (
  id text primary key,
  tenant_id uuid not null references platform.tenants (id),
  name text check (length(name) between 1 and 80),
  csrf_token text not null,
  created_at timestamptz not null default now(),
  last_seen_at timestamptz not null default now(),
  ended_at timestamptz
);
create index sessions_by_tenant on platform.sessions (tenant_id);

create table platform.wipes (
  cutoff timestamptz primary key,
  started_at timestamptz not null default now(),
  finished_at timestamptz,
  sandboxes int not null default 0,
  rows_deleted bigint not null default 0,
  error text
);

create function platform.wipe_cutoff(t timestamptz) returns timestamptz
  language sql immutable
  as $$
    select case when t >= b then b else b - interval '1 day' end
      from (select (date_trunc('day', t at time zone 'UTC')
                    + interval '10 hours') at time zone 'UTC' as b) x
  $$;
