-- The CRM's database in split mode: its inbox and its interactions, as
-- 0004_bakery.sql made them in the shared database.

select platform.create_inbox('crm');

create table crm.interactions (
  id bigint generated always as identity primary key,
  tenant_id uuid not null,
  message_id uuid not null unique,
  email text not null,
  order_id uuid not null,
  kind text not null,
  note text not null,
  at timestamptz not null default now()
);
select platform.enable_tenant_rls('crm.interactions');
