-- The queue's tenant column is tenant_id (see tenancy/0002_tenant.sql).
-- A view keeps the names of its own columns: attempt_log's is renamed
-- beside its tables'.

do $$
declare
  t regclass;
begin
  foreach t in array array[
    '{{queue}}.messages', '{{queue}}.deliveries', '{{queue}}.attempts',
    '{{queue}}.actions', '{{queue}}.closure_counts', '{{queue}}.mismatches',
    '{{queue}}.supersessions', '{{queue}}.pauses', '{{queue}}.pause_actions'
  ]::regclass[]
  loop
    execute format('alter table %s rename column sandbox_id to tenant_id', t);
    if exists (select from pg_policy
                where polrelid = t and polname = 'sandbox_isolation') then
      execute format('drop policy sandbox_isolation on %s', t);
      perform {{platform}}.enable_tenant_rls(t);
    end if;
  end loop;
end $$;

alter view {{queue}}.attempt_log rename column sandbox_id to tenant_id;

alter index {{queue}}.messages_by_sandbox rename to messages_by_tenant;
alter index {{queue}}.pause_actions_by_sandbox rename to pause_actions_by_tenant;
