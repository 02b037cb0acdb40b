-- The schedule's database in split mode: its inbox and its bookings, as
-- 0004_bakery.sql made them in the shared database.

select platform.create_inbox('schedule');

create table schedule.bookings (
  order_id uuid not null,
  sku text not null,
  tenant_id uuid not null,
  day date not null,
  qty int not null,
  state text not null check (state in ('held', 'reserved', 'released')),
  version int not null,
  primary key (order_id, sku)
);
create index bookings_by_day on schedule.bookings (tenant_id, day, sku);
select platform.enable_tenant_rls('schedule.bookings');
