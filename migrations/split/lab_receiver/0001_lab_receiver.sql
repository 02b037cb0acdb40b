-- The ledger lab's receiver in split mode: its inbox and its jobs, as
-- 0007_labs.sql made them in the shared database.

select platform.create_inbox('lab_receiver');

create table lab_receiver.jobs (
  tenant_id uuid not null,
  order_id text not null,
  message_id uuid not null,
  label text not null,
  state text not null check (state in ('scheduled', 'cancelled')),
  version int not null,
  applied_at timestamptz not null default now(),
  primary key (tenant_id, order_id)
);
select platform.enable_tenant_rls('lab_receiver.jobs');
