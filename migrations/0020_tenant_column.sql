-- The bakery's tables name their sandbox column tenant_id, as the messaging
-- core's do since its tenancy/0002_tenant.sql (applied before this file):
-- one word for the column across the database, while the bakery's code and
-- pages keep saying sandbox. Every column left is renamed, its table's
-- policy made again by the core's function, and the indexes and
-- constraints named after it follow.

do $$
declare
  t record;
begin
  for t in
    select c.oid::regclass as r, c.relkind as k
      from pg_attribute a
      join pg_class c on c.oid = a.attrelid
      join pg_namespace n on n.oid = c.relnamespace
     where a.attname = 'sandbox_id' and not a.attisdropped
       and c.relkind in ('r', 'p', 'v')
       and n.nspname not in ('pg_catalog', 'information_schema')
  loop
    execute format('alter %s %s rename column sandbox_id to tenant_id',
                   case when t.k = 'v' then 'view' else 'table' end, t.r);
    if exists (select from pg_policy
                where polrelid = t.r and polname = 'sandbox_isolation') then
      execute format('drop policy sandbox_isolation on %s', t.r);
      perform platform.enable_tenant_rls(t.r);
    end if;
  end loop;
  for t in
    select n.nspname as s, c.relname as r
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where c.relkind = 'i' and c.relname like '%\_by\_sandbox'
  loop
    execute format('alter index %I.%I rename to %I', t.s, t.r,
                   replace(t.r, '_by_sandbox', '_by_tenant'));
  end loop;
end $$;

alter table platform.sessions
  rename constraint sessions_sandbox_id_fkey to sessions_tenant_id_fkey;

-- 0017's one-off, run there and never again.
drop function platform.outbox_to_owed_only(text);
