-- The start of every service's own database in split mode: the service's
-- role and schema, as 0001_platform.sql makes them for each service in the
-- one shared database. {{service}} is the service's name.
--
-- Roles belong to the cluster, so another database of the same server may
-- have made this one already.

do $$
begin
  if not exists (select 1 from pg_roles where rolname = '{{service}}') then
    begin
      create role {{service}} nologin;
    exception when duplicate_object or unique_violation then
      null; -- another database of the same cluster made it meanwhile
    end;
  end if;
  -- Since PostgreSQL 16 a CREATEROLE user is not a member of the roles it
  -- makes; it must be one to SET ROLE.
  if not pg_has_role(current_user, '{{service}}', 'MEMBER') then
    grant {{service}} to current_user;
  end if;
end $$;

create schema {{service}};
grant usage on schema {{service}} to {{service}}, console;
grant usage on schema platform to {{service}};
grant select on platform.tenants, platform.faults to {{service}};
alter default privileges in schema {{service}}
  grant select, insert, update, delete on tables to {{service}};
alter default privileges in schema {{service}}
  grant usage, select on sequences to {{service}};
alter default privileges in schema {{service}}
  grant select on tables to console;
