-- The daily wipe closes a sandbox before it deletes its rows
-- (services/wipe.ts). Deleting while the sandbox still worked left rows
-- behind: each DELETE saw only what had committed when it began, so an
-- OrderPaid that a PaymentSucceeded in flight wrote a moment later stayed,
-- and became a dead letter nobody could reach.
--
-- A sandbox is in one of three states, told by two columns:
-- open (wiping_at null; the wipe moves it on when it was created before
-- the day's boundary), wiping (wiping_at set, wiped_at null: closed to
-- work, its rows still being deleted; the wipe moves it on once they are
-- all gone, and a wipe that failed leaves it here for the next run to
-- finish), wiped (both set; final).
alter table platform.sandboxes add column wiping_at timestamptz;

-- Sandboxes marked wiped before this migration were wiped while they still
-- worked, and may have rows left: they are wiping again, and the next run
-- of the wipe finishes them.
update platform.sandboxes set wiping_at = wiped_at, wiped_at = null
 where wiped_at is not null;

alter table platform.sandboxes add constraint sandboxes_wiped_after_wiping
  check (wiped_at is null or wiping_at is not null);

-- The sandboxes being wiped: usually none, at most a day's worth.
create index sandboxes_wiping on platform.sandboxes (id)
  where wiping_at is not null and wiped_at is null;

-- The wipe's boundary at or before `t`: 10:00 UTC that day, or the day
-- before when `t` is earlier. The wipe passes the database's now(), so
-- that one clock decides for every process.
create function platform.wipe_cutoff(t timestamptz) returns timestamptz
  language sql immutable
  as $$
    select case when t >= b then b else b - interval '1 day' end
      from (select (date_trunc('day', t at time zone 'UTC')
                    + interval '10 hours') at time zone 'UTC' as b) x
  $$;

-- The gate of every service transaction that names a sandbox
-- (lib/db/service.ts calls it as the transaction begins): a sandbox whose
-- wipe has begun is refused with SQLSTATE 55W01, which aborts the
-- transaction before it reads or writes anything. A sandbox without a row
-- is open. Security definer: the services' roles need not read the table.
create function platform.enter_sandbox(id uuid) returns boolean
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  if exists (select from platform.sandboxes s
              where s.id = enter_sandbox.id and s.wiping_at is not null) then
    raise exception using errcode = '55W01',
      message = format('sandbox %s is closed: it is being wiped or was wiped',
                       id);
  end if;
  return true;
end $$;

-- True when the sandbox's wipe has begun: for statements that store what a
-- worker holds in memory (a message it publishes, one the broker gave it),
-- which may come after the wipe ended.
create function platform.sandbox_closed(id uuid) returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$
    select exists (select from platform.sandboxes s
                    where s.id = $1 and s.wiping_at is not null)
  $$;

-- The sandboxes being wiped, for the relay's and consumers' claims to leave
-- their rows alone, called as a scalar subquery: once per statement, one
-- look at an index that is usually empty.
create function platform.wiping_sandboxes() returns uuid[]
  language sql stable security definer
  set search_path = pg_catalog
  as $$
    select coalesce(array_agg(s.id), '{}') from platform.sandboxes s
     where s.wiping_at is not null and s.wiped_at is null
  $$;

-- What came for a closed sandbox and was refused, and why: nothing of it
-- was applied, and nothing was dropped without a row. The wipe keeps this
-- table, the sandbox's row and its ended sessions; every other row of the
-- sandbox goes.
create table platform.closed_refusals (
  id bigint generated always as identity primary key,
  sandbox_id uuid not null references platform.sandboxes (id),
  refused_at timestamptz not null default now(),
  -- who refused it: a service (kitchen, billing, ...), or queue for the
  -- relay's and consumers' statements
  refused_by text not null,
  -- delivery: a message sent to a receiver, or taken from the broker;
  -- message: one the relay published; webhook: a Stripe event;
  -- request: an HTTP request of the sandbox (a command, a page)
  what text not null
    check (what in ('delivery', 'message', 'webhook', 'request')),
  -- the message id (and subscriber), the Stripe event id, or the method
  -- and path
  key text,
  reason text not null
);
create index closed_refusals_by_sandbox
  on platform.closed_refusals (sandbox_id, id);
-- The queue's statements record their refusals themselves (the relay's
-- publish, the broker's consumers); the rest go through the program's own
-- user (lib/db/closed.ts).
grant insert on platform.closed_refusals to queue;
grant select on platform.closed_refusals to console;
