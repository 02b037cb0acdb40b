-- The outbox's tenant column is tenant_id (see tenancy/0002_tenant.sql),
-- in the outboxes made already and in those made from now on.

do $$
declare
  t regclass;
begin
  for t in
    select c.oid::regclass
      from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      join pg_attribute a on a.attrelid = c.oid and a.attname = 'sandbox_id'
     where c.relkind in ('r', 'p') and c.relname in ('outbox', 'relay_guard')
       and exists (select from pg_class o
                    where o.relnamespace = n.oid and o.relname = 'outbox')
  loop
    execute format('alter table %s rename column sandbox_id to tenant_id', t);
    if exists (select from pg_policy
                where polrelid = t and polname = 'sandbox_isolation') then
      execute format('drop policy sandbox_isolation on %s', t);
      perform {{platform}}.enable_tenant_rls(t);
    end if;
  end loop;
end $$;

create or replace function {{platform}}.create_outbox(s text) returns void
  language plpgsql
  as $$
begin
  execute format($ddl$
    create table %1$I.outbox (
      id bigint generated always as identity,
      tenant_id uuid not null,
      message_id uuid primary key,
      type text not null,
      envelope jsonb not null,
      state text not null default 'pending'
        check (state in ('pending', 'claimed')),
      attempts int not null default 0,
      last_error text,
      created_at timestamptz not null default now(),
      next_attempt_at timestamptz not null default now(),
      lease_owner text,
      lease_expires_at timestamptz,
      check ((state = 'claimed') = (lease_owner is not null))
    );
    create trigger outbox_immutable before update on %1$I.outbox
      for each row execute function {{platform}}.forbid_envelope_change();

    -- The loop guard: automatic re-arms after a failed publish, per tenant
    -- and UTC day.
    create table %1$I.relay_guard (
      tenant_id uuid not null,
      day date not null,
      rearms int not null default 0,
      primary key (tenant_id, day)
    );
  $ddl$, s);
  perform {{platform}}.enable_tenant_rls(format('%I.outbox', s)::regclass);
  perform {{platform}}.enable_tenant_rls(format('%I.relay_guard', s)::regclass);
end $$;

create or replace function {{platform}}.add_outbox_indexes(s text) returns void
  language plpgsql
  as $$
begin
  execute format(
    'create index outbox_retry on %I.outbox (tenant_id, next_attempt_at)
       where state = ''pending'' and attempts > 0', s);
end $$;
