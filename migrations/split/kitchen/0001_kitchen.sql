-- The kitchen's database in split mode: its inbox and its cards, as
-- 0004_bakery.sql made them in the shared database.

select platform.create_inbox('kitchen');

create table kitchen.cards (
  order_id uuid primary key,
  tenant_id uuid not null,
  state text not null check (state in ('new', 'confirmed', 'cancelled')),
  version int not null,
  items jsonb not null default '[]',
  day date,
  placed_message_id uuid,
  updated_at timestamptz not null default now()
);
create index cards_by_tenant on kitchen.cards (tenant_id, updated_at desc);
select platform.enable_tenant_rls('kitchen.cards');
