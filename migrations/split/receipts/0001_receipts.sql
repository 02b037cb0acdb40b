-- The receipts service's database in split mode: its inbox and its
-- receipts, as 0004_bakery.sql and 0005_console_ops.sql made them in the
-- shared database.

select platform.create_inbox('receipts');

create table receipts.receipts (
  order_id uuid primary key,
  tenant_id uuid not null,
  number text not null,
  lines jsonb not null,
  total_cents int not null,
  payment_ref text not null,
  message_id uuid not null,
  issued_at timestamptz not null default now()
);
create index receipts_by_number on receipts.receipts (number);
select platform.enable_tenant_rls('receipts.receipts');
