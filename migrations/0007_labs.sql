-- The labs (services/labs/): a sender and a receiver for the failure ledger,
-- and a ticket printer for the Queue Lab. Each is a service as the bakery's
-- are: a NOLOGIN role of its own and a schema that only that role writes, so
-- the ledger's sender and receiver cannot share a transaction either. Every
-- table carries sandbox_id and the sandbox policy; the daily wipe finds them
-- by that column (services/wipe.ts).

do $$
declare
  s text;
begin
  foreach s in array array['lab_sender', 'lab_receiver', 'lab_printer']
  loop
    if not exists (select 1 from pg_roles where rolname = s) then
      begin
        execute format('create role %I nologin', s);
      exception when duplicate_object or unique_violation then
        null; -- another database of the same cluster created it meanwhile
      end;
    end if;
    if not pg_has_role(current_user, s, 'MEMBER') then
      execute format('grant %I to %I', s, current_user);
    end if;
    execute format('create schema %I', s);
    execute format('grant usage on schema %I to %I, console', s, s);
    execute format('grant usage on schema platform to %I', s);
    execute format('alter default privileges in schema %I
      grant select, insert, update, delete on tables to %I', s, s);
    execute format('alter default privileges in schema %I
      grant usage, select on sequences to %I', s, s);
    execute format('alter default privileges in schema %I
      grant select on tables to console', s);
  end loop;
end $$;

-- The lab's relay claims only the rows of the sandbox it runs for, by the
-- fault-switch filter of the relay's claim (lib/relay/outbox_sql.ts), so it
-- reads the switches as the bakery's senders do.
grant select on platform.faults to lab_sender;

-- The ledger's sender: order O42 and the instructions it owes. ------------

select platform.create_outbox_with_indexes('lab_sender');

-- Order states: placed (accepted by the sender), cancelled (a later command
-- of the sender). Moved only by the lab's sender commands.
create table lab_sender.orders (
  sandbox_id uuid not null,
  order_id text not null check (order_id ~ '^O[0-9]{1,6}$'),
  state text not null default 'placed' check (state in ('placed', 'cancelled')),
  version int not null default 1,
  created_at timestamptz not null default now(),
  primary key (sandbox_id, order_id)
);
select platform.enable_sandbox_rls('lab_sender.orders');

-- The ledger's receiver: the jobs it schedules, its inbox and refusals. -----

select platform.create_inbox('lab_receiver');

-- Job states: scheduled (made by a creation), cancelled (a cancellation, also
-- kept when it came before the creation, so that the late creation is seen
-- to be stale). One job per order: a second instruction for one is refused.
create table lab_receiver.jobs (
  sandbox_id uuid not null,
  order_id text not null,
  message_id uuid not null,
  -- the instruction's name in the story (M7)
  label text not null,
  state text not null check (state in ('scheduled', 'cancelled')),
  version int not null,
  applied_at timestamptz not null default now(),
  primary key (sandbox_id, order_id)
);
select platform.enable_sandbox_rls('lab_receiver.jobs');

-- The Queue Lab's printer: one row per oven ticket printed, and an inbox for
-- the runs in which it remembers the ids it has printed. ---------------------

select platform.create_inbox('lab_printer');

create table lab_printer.tickets (
  id bigint generated always as identity primary key,
  sandbox_id uuid not null,
  message_id uuid not null,
  order_no int not null,
  worker int not null,
  attempt int not null,
  printed_at timestamptz not null default now()
);
create index tickets_by_sandbox on lab_printer.tickets (sandbox_id, id);
select platform.enable_sandbox_rls('lab_printer.tickets');

-- The Queue Lab's last run per sandbox: what was asked, and what each
-- worker did when (the timeline the page draws). The figures are counted
-- from the tickets and the queue's rows, not kept here.
create table lab_printer.runs (
  sandbox_id uuid primary key,
  settings jsonb not null,
  timeline jsonb not null,
  -- What the queue's rows said at the end of the run (deadLetters,
  -- deliveries): the run's queue rows are then deleted, so the lab's dead
  -- letters do not stand in the operator console as the bakery's.
  queue_figures jsonb not null,
  ran_at timestamptz not null default now()
);
select platform.enable_sandbox_rls('lab_printer.runs');
