-- The queue lab's printer in split mode: its inbox, its tickets and its
-- runs, as 0007_labs.sql made them in the shared database. The lab
-- publishes its jobs to a queue in this same database.

select platform.create_inbox('lab_printer');

create table lab_printer.tickets (
  id bigint generated always as identity primary key,
  tenant_id uuid not null,
  message_id uuid not null,
  order_no int not null,
  worker int not null,
  attempt int not null,
  printed_at timestamptz not null default now()
);
create index tickets_by_tenant on lab_printer.tickets (tenant_id, id);

create table lab_printer.runs (
  tenant_id uuid primary key,
  settings jsonb not null,
  timeline jsonb not null,
  queue_figures jsonb not null,
  ran_at timestamptz not null default now()
);

select platform.enable_tenant_rls(t::regclass) from unnest(array[
  'lab_printer.tickets', 'lab_printer.runs'
]) as t;
