-- How many times each inbox answered a repeat from its stored answer: a
-- message id it already had came again (a redelivery after a lost
-- acknowledgement, a redrive, a delivery sent twice). Counted on the inbox
-- row itself, where the repeat is recognised, so "applied once" can be shown
-- with its count of repeats (the How it's built page reads it).

-- Inboxes made from now on (the services' and the tests' receivers).
create or replace function platform.create_inbox(s text) returns void
  language plpgsql
  as $$
begin
  execute format($ddl$
    -- One row per message id this receiver has seen, with the answer it gave
    -- (200 applied, 422 refused) so that a repeat gets the same answer, and
    -- how many repeats got it.
    create table %1$I.inbox (
      message_id uuid primary key,
      sandbox_id uuid not null,
      type text not null,
      received_at timestamptz not null default now(),
      status int not null check (status in (200, 422)),
      outcome jsonb not null default '{}',
      repeats int not null default 0 check (repeats >= 0)
    );
    -- Every instruction the receiver refused, and why.
    create table %1$I.refusals (
      id bigint generated always as identity primary key,
      sandbox_id uuid not null,
      message_id uuid not null unique,
      type text not null,
      reason text not null,
      refused_at timestamptz not null default now()
    );
  $ddl$, s);
  perform platform.enable_sandbox_rls(format('%I.inbox', s)::regclass);
  perform platform.enable_sandbox_rls(format('%I.refusals', s)::regclass);
end $$;

-- Inboxes made before: every table named inbox that has the inbox's shape.
do $$
declare
  t regclass;
begin
  for t in
    select c.oid::regclass
      from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
     where c.relname = 'inbox' and c.relkind = 'r'
       and exists (select from pg_attribute a
                    where a.attrelid = c.oid and a.attname = 'outcome'
                      and not a.attisdropped)
  loop
    execute format(
      'alter table %s add column if not exists repeats int not null default 0
         check (repeats >= 0)', t);
  end loop;
end $$;
