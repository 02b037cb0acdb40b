/**
 * The catalog queries behind the schema dump (kit/postgres/schema_dump.ts). Each
 * returns plain rows, ordered by name in the "C" collation so that the dump
 * does not depend on the database's locale. "The project's schemas" are
 * every schema of the database but PostgreSQL's own (pg_*,
 * information_schema); objects that belong to an extension are left out, as
 * pg_dump leaves them out.
 */
import type { TxSql } from "../../lib/db/connect.ts";

/** A privilege granted on one object, one row per privilege. */
export interface PrivilegeRow {
  kind: string;
  target: string;
  column: string | null;
  grantee: string;
  privilege: string;
  grantable: boolean;
}

/** Fragments that every catalog query of the dump shares. */
export function fragments(sql: TxSql) {
  return {
    /** Object ids of the project's schemas. */
    ns: sql`select oid from pg_namespace
      where nspname <> 'information_schema' and nspname !~ '^pg_'`,
    /** True unless the object (of catalog `classid`) belongs to an extension. */
    own: (classid: string, oid: ReturnType<TxSql>) =>
      sql`not exists (select 1 from pg_depend e
        where e.classid = ${classid}::regclass and e.objid = ${oid}
          and e.deptype = 'e')`,
    /** The qualified name of relation `c` in schema `n`. */
    rel: sql`quote_ident(n.nspname) || '.' || quote_ident(c.relname)`,
  };
}

/**
 * Reads the project's schemas, privileges, owners, types, functions and
 * comments (the tables are kit/postgres/schema_tables.ts's).
 */
export async function readCatalog(sql: TxSql) {
  const { ns, own, rel } = fragments(sql);

  const schemas = await sql<{ name: string; builtin: boolean }[]>`
    select nspname as name, nspname = 'public' as builtin
      from pg_namespace where oid in (${ns})
     order by nspname collate "C"`;

  // Every grant on the project's objects, to anyone but the object's owner.
  // An ACL that was never set is the default one (acldefault): PUBLIC may
  // execute a function, so a REVOKE from PUBLIC shows as a missing line.
  const privileges = await sql<PrivilegeRow[]>`
    with objects as (
      select case when c.relkind = 'S' then 'sequence' else 'table' end
               as kind, ${rel} as target, null::text as column,
             c.relowner as owner,
             coalesce(c.relacl, acldefault(case when c.relkind = 'S'
                                                then 's' else 'r' end::"char",
                                           c.relowner)) as acl
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where c.relnamespace in (${ns}) and c.relkind in ('r','p','v','m','S','f')
         and ${own("pg_class", sql`c.oid`)}
      union all
      select 'table', ${rel}, quote_ident(a.attname), c.relowner, a.attacl
        from pg_attribute a join pg_class c on c.oid = a.attrelid
        join pg_namespace n on n.oid = c.relnamespace
       where c.relnamespace in (${ns}) and a.attacl is not null
      union all
      select 'schema', quote_ident(nspname), null, nspowner,
             coalesce(nspacl, acldefault('n', nspowner))
        from pg_namespace where oid in (${ns})
      union all
      select case when p.prokind = 'p' then 'procedure' else 'function' end,
             quote_ident(n.nspname) || '.' || quote_ident(p.proname) || '(' ||
               pg_get_function_identity_arguments(p.oid) || ')',
             null, p.proowner, coalesce(p.proacl, acldefault('f', p.proowner))
        from pg_proc p join pg_namespace n on n.oid = p.pronamespace
       where p.pronamespace in (${ns}) and ${own("pg_proc", sql`p.oid`)}
      union all
      select 'type', format_type(t.oid, null), null, t.typowner,
             coalesce(t.typacl, acldefault('T', t.typowner))
        from pg_type t
       where t.typnamespace in (${ns}) and t.typtype in ('e', 'd', 'r', 'm')
      union all
      select 'database', 'current_database()', null, datdba,
             coalesce(datacl, acldefault('d', datdba))
        from pg_database where datname = current_database()
    )
    select * from (
      select o.kind, o.target, o.column,
             case when a.grantee = 0 then 'PUBLIC'
                  else quote_ident(pg_get_userbyid(a.grantee)) end as grantee,
             a.privilege_type as privilege, a.is_grantable as grantable
        from objects o, aclexplode(o.acl) a
       where a.grantee <> o.owner
    ) p
     order by p.kind, p.target collate "C", p.column collate "C" nulls first,
              p.grantee collate "C", p.privilege`;

  const defaultPrivileges = await sql<{
    role: string | null;
    schema: string | null;
    objtype: string;
    grantee: string;
    privilege: string;
    grantable: boolean;
  }[]>`
    select * from (
      select case when pg_get_userbyid(d.defaclrole) = current_user then null
                  else quote_ident(pg_get_userbyid(d.defaclrole)) end as role,
             quote_ident(n.nspname) as schema, d.defaclobjtype::text as objtype,
             case when a.grantee = 0 then 'PUBLIC'
                  else quote_ident(pg_get_userbyid(a.grantee)) end as grantee,
             a.privilege_type as privilege, a.is_grantable as grantable
        from pg_default_acl d left join pg_namespace n
          on n.oid = d.defaclnamespace, aclexplode(d.defaclacl) a
       where a.grantee <> d.defaclrole
    ) d
     order by d.role collate "C" nulls first, d.schema collate "C" nulls first,
              d.objtype collate "C", d.grantee collate "C", d.privilege`;

  // Owners other than the user who migrated (who owns everything else).
  const owners = await sql<{ kind: string; target: string; owner: string }[]>`
    select kind, target, quote_ident(pg_get_userbyid(owner)) as owner from (
      select 'schema' as kind, quote_ident(nspname) as target, nspowner as owner
        from pg_namespace where oid in (${ns}) and nspname <> 'public'
      union all
      select 'table', ${rel}, c.relowner from pg_class c
        join pg_namespace n on n.oid = c.relnamespace
       where c.relnamespace in (${ns}) and c.relkind in ('r','p','v','m','S','f')
      union all
      select 'function', p.oid::regprocedure::text, p.proowner from pg_proc p
       where p.pronamespace in (${ns})
    ) o
     where pg_get_userbyid(owner) <> current_user
     order by kind, target collate "C"`;

  const extensions = await sql<
    { name: string; schema: string; version: string }[]
  >`
    select quote_ident(x.extname) as name, quote_ident(n.nspname) as schema,
           x.extversion as version
      from pg_extension x join pg_namespace n on n.oid = x.extnamespace
     where x.oid >= 16384
     order by x.extname collate "C"`;

  // Enums and domains (a domain's NOT NULL is one of its constraints).
  const types = await sql<{
    name: string;
    typtype: string;
    base: string | null;
    default: string | null;
    labels: string | null;
    checks: string | null;
  }[]>`
    select format_type(t.oid, null) as name, t.typtype,
           format_type(t.typbasetype, t.typtypmod) as base,
           t.typdefault as default,
           (select string_agg(quote_literal(e.enumlabel), ', '
                              order by e.enumsortorder)
              from pg_enum e where e.enumtypid = t.oid) as labels,
           (select string_agg('CONSTRAINT ' || quote_ident(k.conname) || ' '
                              || pg_get_constraintdef(k.oid), ' '
                              order by k.conname collate "C")
              from pg_constraint k where k.contypid = t.oid) as checks
      from pg_type t
     where t.typnamespace in (${ns}) and t.typtype in ('e', 'd')
       and ${own("pg_type", sql`t.oid`)}
     order by format_type(t.oid, null) collate "C"`;

  const functions = await sql<
    { definition: string | null; kind: string; target: string }[]
  >`
    select case when p.prokind = 'a' then null
                else pg_get_functiondef(p.oid) end as definition,
           case when p.prokind = 'p' then 'procedure' else 'function' end
             as kind,
           quote_ident(n.nspname) || '.' || quote_ident(p.proname) || '(' ||
             pg_get_function_identity_arguments(p.oid) || ')' as target
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where p.pronamespace in (${ns}) and ${own("pg_proc", sql`p.oid`)}
     order by n.nspname collate "C", p.proname collate "C",
              pg_get_function_identity_arguments(p.oid) collate "C"`;

  // Comments on the project's objects (initdb's own have oids below 16384)
  // and on the roles the dump shows (read separately, being cluster-wide).
  const comments = await sql<
    { type: string; identity: string; text: string }[]
  >`
    select o.type, o.identity, d.description as text
      from pg_description d,
           pg_identify_object(d.classoid, d.objoid, d.objsubid) o
     where d.objoid >= 16384
       and coalesce(o.schema, '') not in ('pg_catalog', 'information_schema')
       and not exists (select 1 from pg_depend e where e.classid = d.classoid
                         and e.objid = d.objoid and e.deptype = 'e')
     order by o.type collate "C", o.identity collate "C"`;

  return {
    schemas,
    privileges,
    defaultPrivileges,
    owners,
    extensions,
    types,
    functions,
    comments,
  };
}

/**
 * The roles that the project's objects name (grantees, policies' roles,
 * owners other than the migrating user), with their attributes, the
 * memberships among them, their settings and comments. Roles belong to the
 * cluster, so the dump shows these alone, not every role of the server.
 */
export async function readRoles(sql: TxSql, names: string[]) {
  const roles = await sql<{
    name: string;
    options: string;
    settings: string[] | null;
    comment: string | null;
  }[]>`
    select quote_ident(r.rolname) as name,
           concat_ws(' ',
             case when r.rolsuper then 'SUPERUSER' end,
             case when not r.rolinherit then 'NOINHERIT' end,
             case when r.rolcreaterole then 'CREATEROLE' end,
             case when r.rolcreatedb then 'CREATEDB' end,
             case when r.rolcanlogin then 'LOGIN' else 'NOLOGIN' end,
             case when r.rolreplication then 'REPLICATION' end,
             case when r.rolbypassrls then 'BYPASSRLS' end,
             case when r.rolconnlimit <> -1
                  then 'CONNECTION LIMIT ' || r.rolconnlimit end) as options,
           (select array_agg(c order by c collate "C")
              from pg_db_role_setting s, unnest(s.setconfig) c
             where s.setrole = r.oid
               and s.setdatabase in (0, (select oid from pg_database
                                          where datname = current_database())))
             as settings,
           shobj_description(r.oid, 'pg_authid') as comment
      from pg_roles r
     where quote_ident(r.rolname) = any(${names}) and r.rolname !~ '^pg_'
       and r.rolname <> current_user
     order by r.rolname collate "C"`;
  const memberships = await sql<
    { role: string; member: string; admin: boolean }[]
  >`
    select quote_ident(r.rolname) as role, quote_ident(m.rolname) as member,
           a.admin_option as admin
      from pg_auth_members a join pg_roles r on r.oid = a.roleid
      join pg_roles m on m.oid = a.member
     where quote_ident(r.rolname) = any(${names})
       and quote_ident(m.rolname) = any(${names})
     order by r.rolname collate "C", m.rolname collate "C"`;
  return { roles, memberships };
}
