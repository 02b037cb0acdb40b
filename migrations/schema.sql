-- The schema of a freshly migrated database, read from the catalog by
-- kit/postgres/schema_dump.ts. Do not edit: change the migrations, run
-- `deno task schema`, and review the change to this file with them
-- (tests/schema_test.ts fails while the two differ). Objects are owned by
-- the user who migrated, to whom the roles are also granted when it is not
-- a superuser; neither is shown.

-- Roles (cluster-wide: those the schema names)
CREATE ROLE billing NOLOGIN;
CREATE ROLE console NOLOGIN;
CREATE ROLE crm NOLOGIN;
CREATE ROLE customers NOLOGIN;
CREATE ROLE dispatch NOLOGIN;
CREATE ROLE kitchen NOLOGIN;
CREATE ROLE lab_printer NOLOGIN;
CREATE ROLE lab_receiver NOLOGIN;
CREATE ROLE lab_sender NOLOGIN;
CREATE ROLE orders NOLOGIN;
CREATE ROLE queue NOLOGIN;
CREATE ROLE receipts NOLOGIN;
CREATE ROLE relay NOLOGIN;
CREATE ROLE schedule NOLOGIN;

-- Extensions
CREATE EXTENSION pg_trgm SCHEMA platform VERSION '1.6';

-- The database
GRANT CONNECT, TEMPORARY ON DATABASE current_database() TO PUBLIC;

-- Schemas
CREATE SCHEMA billing;
GRANT USAGE ON SCHEMA billing TO billing;
GRANT USAGE ON SCHEMA billing TO console;
GRANT USAGE ON SCHEMA billing TO relay;
CREATE SCHEMA console;
GRANT USAGE ON SCHEMA console TO console;
GRANT USAGE ON SCHEMA console TO queue;
GRANT USAGE ON SCHEMA console TO relay;
CREATE SCHEMA crm;
GRANT USAGE ON SCHEMA crm TO console;
GRANT USAGE ON SCHEMA crm TO crm;
CREATE SCHEMA customers;
GRANT USAGE ON SCHEMA customers TO console;
GRANT USAGE ON SCHEMA customers TO customers;
CREATE SCHEMA dispatch;
GRANT USAGE ON SCHEMA dispatch TO console;
GRANT USAGE ON SCHEMA dispatch TO dispatch;
CREATE SCHEMA kitchen;
GRANT USAGE ON SCHEMA kitchen TO console;
GRANT USAGE ON SCHEMA kitchen TO kitchen;
CREATE SCHEMA lab_printer;
GRANT USAGE ON SCHEMA lab_printer TO console;
GRANT USAGE ON SCHEMA lab_printer TO lab_printer;
CREATE SCHEMA lab_receiver;
GRANT USAGE ON SCHEMA lab_receiver TO console;
GRANT USAGE ON SCHEMA lab_receiver TO lab_receiver;
CREATE SCHEMA lab_sender;
GRANT USAGE ON SCHEMA lab_sender TO console;
GRANT USAGE ON SCHEMA lab_sender TO lab_sender;
GRANT USAGE ON SCHEMA lab_sender TO relay;
CREATE SCHEMA orders;
GRANT USAGE ON SCHEMA orders TO console;
GRANT USAGE ON SCHEMA orders TO orders;
GRANT USAGE ON SCHEMA orders TO relay;
CREATE SCHEMA platform;
GRANT USAGE ON SCHEMA platform TO billing;
GRANT USAGE ON SCHEMA platform TO console;
GRANT USAGE ON SCHEMA platform TO crm;
GRANT USAGE ON SCHEMA platform TO customers;
GRANT USAGE ON SCHEMA platform TO dispatch;
GRANT USAGE ON SCHEMA platform TO kitchen;
GRANT USAGE ON SCHEMA platform TO lab_printer;
GRANT USAGE ON SCHEMA platform TO lab_receiver;
GRANT USAGE ON SCHEMA platform TO lab_sender;
GRANT USAGE ON SCHEMA platform TO orders;
GRANT USAGE ON SCHEMA platform TO queue;
GRANT USAGE ON SCHEMA platform TO receipts;
GRANT USAGE ON SCHEMA platform TO relay;
GRANT USAGE ON SCHEMA platform TO schedule;
-- schema public (every database has it)
GRANT USAGE ON SCHEMA public TO PUBLIC;
CREATE SCHEMA queue;
GRANT USAGE ON SCHEMA queue TO console;
GRANT USAGE ON SCHEMA queue TO queue;
GRANT USAGE ON SCHEMA queue TO relay;
CREATE SCHEMA receipts;
GRANT USAGE ON SCHEMA receipts TO console;
GRANT USAGE ON SCHEMA receipts TO receipts;
CREATE SCHEMA schedule;
GRANT USAGE ON SCHEMA schedule TO console;
GRANT USAGE ON SCHEMA schedule TO schedule;

-- Default privileges of the user who migrated, unless another role is named
ALTER DEFAULT PRIVILEGES IN SCHEMA billing GRANT SELECT, USAGE ON SEQUENCES TO billing;
ALTER DEFAULT PRIVILEGES IN SCHEMA billing GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO billing;
ALTER DEFAULT PRIVILEGES IN SCHEMA billing GRANT SELECT ON TABLES TO console;
ALTER DEFAULT PRIVILEGES IN SCHEMA console GRANT SELECT, USAGE ON SEQUENCES TO queue;
ALTER DEFAULT PRIVILEGES IN SCHEMA console GRANT SELECT ON TABLES TO console;
ALTER DEFAULT PRIVILEGES IN SCHEMA console GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO queue;
ALTER DEFAULT PRIVILEGES IN SCHEMA crm GRANT SELECT, USAGE ON SEQUENCES TO crm;
ALTER DEFAULT PRIVILEGES IN SCHEMA crm GRANT SELECT ON TABLES TO console;
ALTER DEFAULT PRIVILEGES IN SCHEMA crm GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO crm;
ALTER DEFAULT PRIVILEGES IN SCHEMA customers GRANT SELECT, USAGE ON SEQUENCES TO customers;
ALTER DEFAULT PRIVILEGES IN SCHEMA customers GRANT SELECT ON TABLES TO console;
ALTER DEFAULT PRIVILEGES IN SCHEMA customers GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO customers;
ALTER DEFAULT PRIVILEGES IN SCHEMA dispatch GRANT SELECT, USAGE ON SEQUENCES TO dispatch;
ALTER DEFAULT PRIVILEGES IN SCHEMA dispatch GRANT SELECT ON TABLES TO console;
ALTER DEFAULT PRIVILEGES IN SCHEMA dispatch GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO dispatch;
ALTER DEFAULT PRIVILEGES IN SCHEMA kitchen GRANT SELECT, USAGE ON SEQUENCES TO kitchen;
ALTER DEFAULT PRIVILEGES IN SCHEMA kitchen GRANT SELECT ON TABLES TO console;
ALTER DEFAULT PRIVILEGES IN SCHEMA kitchen GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO kitchen;
ALTER DEFAULT PRIVILEGES IN SCHEMA lab_printer GRANT SELECT, USAGE ON SEQUENCES TO lab_printer;
ALTER DEFAULT PRIVILEGES IN SCHEMA lab_printer GRANT SELECT ON TABLES TO console;
ALTER DEFAULT PRIVILEGES IN SCHEMA lab_printer GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO lab_printer;
ALTER DEFAULT PRIVILEGES IN SCHEMA lab_receiver GRANT SELECT, USAGE ON SEQUENCES TO lab_receiver;
ALTER DEFAULT PRIVILEGES IN SCHEMA lab_receiver GRANT SELECT ON TABLES TO console;
ALTER DEFAULT PRIVILEGES IN SCHEMA lab_receiver GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO lab_receiver;
ALTER DEFAULT PRIVILEGES IN SCHEMA lab_sender GRANT SELECT, USAGE ON SEQUENCES TO lab_sender;
ALTER DEFAULT PRIVILEGES IN SCHEMA lab_sender GRANT SELECT ON TABLES TO console;
ALTER DEFAULT PRIVILEGES IN SCHEMA lab_sender GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO lab_sender;
ALTER DEFAULT PRIVILEGES IN SCHEMA orders GRANT SELECT, USAGE ON SEQUENCES TO orders;
ALTER DEFAULT PRIVILEGES IN SCHEMA orders GRANT SELECT ON TABLES TO console;
ALTER DEFAULT PRIVILEGES IN SCHEMA orders GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO orders;
ALTER DEFAULT PRIVILEGES IN SCHEMA queue GRANT SELECT, USAGE ON SEQUENCES TO queue;
ALTER DEFAULT PRIVILEGES IN SCHEMA queue GRANT SELECT ON TABLES TO console;
ALTER DEFAULT PRIVILEGES IN SCHEMA queue GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO queue;
ALTER DEFAULT PRIVILEGES IN SCHEMA receipts GRANT SELECT, USAGE ON SEQUENCES TO receipts;
ALTER DEFAULT PRIVILEGES IN SCHEMA receipts GRANT SELECT ON TABLES TO console;
ALTER DEFAULT PRIVILEGES IN SCHEMA receipts GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO receipts;
ALTER DEFAULT PRIVILEGES IN SCHEMA schedule GRANT SELECT, USAGE ON SEQUENCES TO schedule;
ALTER DEFAULT PRIVILEGES IN SCHEMA schedule GRANT SELECT ON TABLES TO console;
ALTER DEFAULT PRIVILEGES IN SCHEMA schedule GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO schedule;

CREATE OR REPLACE FUNCTION platform.add_outbox_indexes(s text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
begin
  execute format(
    'create index outbox_retry on %I.outbox (tenant_id, next_attempt_at)
       where state = ''pending'' and attempts > 0', s);
end $function$;
GRANT EXECUTE ON FUNCTION platform.add_outbox_indexes(s text) TO PUBLIC;

CREATE OR REPLACE FUNCTION platform.all_tenants()
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$ select coalesce(current_setting('app.scope', true), '') = 'workers' $function$;
GRANT EXECUTE ON FUNCTION platform.all_tenants() TO PUBLIC;

CREATE OR REPLACE FUNCTION platform.create_inbox(s text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
begin
  execute format($ddl$
    -- One row per message id this receiver has seen, with the answer it gave
    -- (200 applied, 422 refused) so that a repeat gets the same answer.
    --
    -- aggregate_id, aggregate_version: the aggregate and version of what was
    -- applied, for the order watch (order_violations, below). A refusal's
    -- row (422) keeps none: it applied no version.
    --
    -- repeats: how many times the inbox answered a repeat from the stored
    -- answer (a redelivery after a lost acknowledgement, a redrive, a
    -- delivery sent twice), counted on the row the repeat found.
    create table %1$I.inbox (
      message_id uuid primary key,
      tenant_id uuid not null,
      type text not null,
      received_at timestamptz not null default now(),
      status int not null check (status in (200, 422)),
      outcome jsonb not null default '{}',
      aggregate_id text,
      aggregate_version int,
      repeats int not null default 0 check (repeats >= 0)
    );
    -- The highest version applied for an aggregate: one index probe per
    -- message received.
    create index inbox_by_aggregate on %1$I.inbox (aggregate_id, aggregate_version)
      where aggregate_id is not null;
    -- Retention's scan for rows past the replay horizon, in block ranges.
    create index inbox_received_by_time on %1$I.inbox using brin (received_at);

    -- Every instruction the receiver refused, and why.
    create table %1$I.refusals (
      id bigint generated always as identity primary key,
      tenant_id uuid not null,
      message_id uuid not null unique,
      type text not null,
      reason text not null,
      refused_at timestamptz not null default now()
    );

    -- The order watch: one row per message of an aggregate that arrived
    -- after a later version of the same aggregate was already applied here
    -- (a message is new to an inbox once, so it is noted once).
    create table %1$I.order_violations (
      id bigint generated always as identity primary key,
      tenant_id uuid not null,
      message_id uuid not null unique,
      type text not null,
      aggregate_id text not null,
      arrived_version int not null,
      applied_version int not null,
      at timestamptz not null default now(),
      check (applied_version > arrived_version)
    );
    create index order_violations_by_tenant on %1$I.order_violations (tenant_id, at);
  $ddl$, s);
  perform platform.enable_tenant_rls(format('%I.inbox', s)::regclass);
  perform platform.enable_tenant_rls(format('%I.refusals', s)::regclass);
  perform platform.enable_tenant_rls(format('%I.order_violations', s)::regclass);
end $function$;
GRANT EXECUTE ON FUNCTION platform.create_inbox(s text) TO PUBLIC;

CREATE OR REPLACE FUNCTION platform.create_outbox(s text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
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
      for each row execute function platform.forbid_envelope_change();

    -- The loop guard: automatic re-arms after a failed publish, per tenant
    -- and UTC day.
    create table %1$I.relay_guard (
      tenant_id uuid not null,
      day date not null,
      rearms int not null default 0,
      primary key (tenant_id, day)
    );
  $ddl$, s);
  perform platform.enable_tenant_rls(format('%I.outbox', s)::regclass);
  perform platform.enable_tenant_rls(format('%I.relay_guard', s)::regclass);
end $function$;
GRANT EXECUTE ON FUNCTION platform.create_outbox(s text) TO PUBLIC;

CREATE OR REPLACE FUNCTION platform.create_outbox_with_indexes(s text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
begin
  perform platform.create_outbox(s);
  perform platform.add_outbox_indexes(s);
  perform platform.open_outbox_to_relay(s);
end $function$;
GRANT EXECUTE ON FUNCTION platform.create_outbox_with_indexes(s text) TO PUBLIC;

CREATE OR REPLACE FUNCTION platform.current_tenant()
 RETURNS uuid
 LANGUAGE sql
 STABLE
AS $function$ select nullif(current_setting('app.tenant_id', true), '')::uuid $function$;
GRANT EXECUTE ON FUNCTION platform.current_tenant() TO PUBLIC;

CREATE OR REPLACE FUNCTION platform.enable_tenant_rls(t regclass)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
begin
  execute format('alter table %s enable row level security', t);
  execute format('drop policy if exists tenant_isolation on %s', t);
  execute format(
    'create policy tenant_isolation on %s
       using (tenant_id = (select platform.current_tenant())
              or (select platform.all_tenants()))
       with check (tenant_id = (select platform.current_tenant())
                   or (select platform.all_tenants()))',
    t);
end $function$;
GRANT EXECUTE ON FUNCTION platform.enable_tenant_rls(t regclass) TO PUBLIC;

CREATE OR REPLACE FUNCTION platform.enter_tenant(id uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog'
AS $function$
begin
  if exists (select from platform.tenants t
              where t.id = enter_tenant.id and t.wiping_at is not null) then
    raise exception using errcode = '55W01',
      message = format('tenant %s is closed: it is being wiped or was wiped',
                       id);
  end if;
  return true;
end $function$;
GRANT EXECUTE ON FUNCTION platform.enter_tenant(id uuid) TO PUBLIC;

CREATE OR REPLACE FUNCTION platform.forbid_envelope_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin
  if new.envelope is distinct from old.envelope
     or new.message_id is distinct from old.message_id then
    raise exception 'a stored envelope is immutable (message %)', old.message_id
      using errcode = 'check_violation';
  end if;
  return new;
end $function$;
GRANT EXECUTE ON FUNCTION platform.forbid_envelope_change() TO PUBLIC;

CREATE OR REPLACE FUNCTION platform.guard_envelope(t regclass, trigger_name text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
begin
  execute format('drop trigger if exists %I on %s', trigger_name, t);
  execute format(
    'create trigger %I before update of envelope, message_id on %s
       for each row execute function platform.forbid_envelope_change()',
    trigger_name, t);
end $function$;
GRANT EXECUTE ON FUNCTION platform.guard_envelope(t regclass, trigger_name text) TO PUBLIC;

CREATE OR REPLACE FUNCTION platform.open_outbox_to_relay(s text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
begin
  execute format('grant usage on schema %I to relay', s);
  execute format('grant select, update, delete on %I.outbox to relay', s);
  perform platform.guard_envelope(format('%I.outbox', s)::regclass,
    'outbox_immutable');
end $function$;
GRANT EXECUTE ON FUNCTION platform.open_outbox_to_relay(s text) TO PUBLIC;

CREATE OR REPLACE FUNCTION platform.refuse(code text, message text)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
begin
  raise exception using errcode = code, message = message;
end $function$;
GRANT EXECUTE ON FUNCTION platform.refuse(code text, message text) TO PUBLIC;

CREATE OR REPLACE FUNCTION platform.tenant_closed(id uuid)
 RETURNS boolean
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog'
AS $function$
    select exists (select from platform.tenants t
                    where t.id = $1 and t.wiping_at is not null)
  $function$;
GRANT EXECUTE ON FUNCTION platform.tenant_closed(id uuid) TO PUBLIC;

CREATE OR REPLACE FUNCTION platform.wipe_cutoff(t timestamp with time zone)
 RETURNS timestamp with time zone
 LANGUAGE sql
 IMMUTABLE
AS $function$
    select case when t >= b then b else b - interval '1 day' end
      from (select (date_trunc('day', t at time zone 'UTC')
                    + interval '10 hours') at time zone 'UTC' as b) x
  $function$;
GRANT EXECUTE ON FUNCTION platform.wipe_cutoff(t timestamp with time zone) TO PUBLIC;

CREATE OR REPLACE FUNCTION platform.wiping_tenants()
 RETURNS uuid[]
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog'
AS $function$
    select coalesce(array_agg(t.id), '{}') from platform.tenants t
     where t.wiping_at is not null and t.wiped_at is null
  $function$;
GRANT EXECUTE ON FUNCTION platform.wiping_tenants() TO PUBLIC;

CREATE OR REPLACE FUNCTION queue.error_pattern(error text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    select regexp_replace(regexp_replace(regexp_replace(coalesce(error, ''),
      '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}',
      '{id}', 'g'),
      '\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}(:?\d{2})?)?',
      '{time}', 'g'),
      '(?<!answered )(?<![\w.{])\d+(\.\d+)?', '{n}', 'g')
  $function$;
GRANT EXECUTE ON FUNCTION queue.error_pattern(error text) TO PUBLIC;
GRANT EXECUTE ON FUNCTION queue.error_pattern(error text) TO console;

CREATE OR REPLACE FUNCTION queue.failure_group(subscriber text, type text, error text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    select left(md5(subscriber || E'\n' || type || E'\n'
                    || queue.error_pattern(error)), 16)
  $function$;
GRANT EXECUTE ON FUNCTION queue.failure_group(subscriber text, type text, error text) TO PUBLIC;
GRANT EXECUTE ON FUNCTION queue.failure_group(subscriber text, type text, error text) TO console;

CREATE TABLE billing.checkout_events (
  event_id text NOT NULL,
  tenant_id uuid NOT NULL,
  payment_id text NOT NULL,
  payload text NOT NULL,
  state text NOT NULL DEFAULT 'pending'::text,
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamp with time zone NOT NULL DEFAULT now(),
  lease_token uuid,
  last_status smallint,
  last_error text,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  finished_at timestamp with time zone,
  resent_by text,
  resent_at timestamp with time zone,
  traceparent text
);
ALTER TABLE billing.checkout_events ADD CONSTRAINT checkout_events_pkey PRIMARY KEY (event_id);
ALTER TABLE billing.checkout_events ADD CONSTRAINT checkout_events_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'delivered'::text, 'gave_up'::text])));
CREATE INDEX checkout_events_by_payment ON billing.checkout_events USING btree (payment_id);
CREATE INDEX checkout_events_due ON billing.checkout_events USING btree (next_attempt_at) WHERE (state = 'pending'::text);
ALTER TABLE billing.checkout_events ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON billing.checkout_events AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE billing.checkout_events TO billing;
GRANT SELECT ON TABLE billing.checkout_events TO console;

CREATE TABLE billing.outbox (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  type text NOT NULL,
  envelope jsonb NOT NULL,
  state text NOT NULL DEFAULT 'pending'::text,
  attempts integer NOT NULL DEFAULT 0,
  last_error text,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  next_attempt_at timestamp with time zone NOT NULL DEFAULT now(),
  lease_owner text,
  lease_expires_at timestamp with time zone
);
ALTER TABLE billing.outbox ADD CONSTRAINT outbox_check CHECK (((state = 'claimed'::text) = (lease_owner IS NOT NULL)));
ALTER TABLE billing.outbox ADD CONSTRAINT outbox_pkey PRIMARY KEY (message_id);
ALTER TABLE billing.outbox ADD CONSTRAINT outbox_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'claimed'::text])));
CREATE INDEX outbox_retry ON billing.outbox USING btree (tenant_id, next_attempt_at) WHERE ((state = 'pending'::text) AND (attempts > 0));
CREATE TRIGGER outbox_immutable BEFORE UPDATE OF envelope, message_id ON billing.outbox FOR EACH ROW EXECUTE FUNCTION platform.forbid_envelope_change();
ALTER TABLE billing.outbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON billing.outbox AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE billing.outbox TO billing;
GRANT SELECT ON TABLE billing.outbox TO console;
GRANT SELECT, UPDATE, DELETE ON TABLE billing.outbox TO relay;
CREATE SEQUENCE billing.outbox_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of billing.outbox.id
GRANT SELECT, USAGE ON SEQUENCE billing.outbox_id_seq TO billing;

CREATE TABLE billing.payments (
  id text NOT NULL,
  tenant_id uuid NOT NULL,
  order_id uuid NOT NULL,
  amount_cents integer NOT NULL,
  state text NOT NULL DEFAULT 'pending'::text,
  card_last4 text,
  failure_reason text,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  currency text NOT NULL DEFAULT 'eur'::text,
  charged_cents integer,
  charged_currency text,
  refund_reason text,
  checkout_url text
);
ALTER TABLE billing.payments ADD CONSTRAINT payments_amount_cents_check CHECK ((amount_cents >= 0));
ALTER TABLE billing.payments ADD CONSTRAINT payments_pkey PRIMARY KEY (id);
ALTER TABLE billing.payments ADD CONSTRAINT payments_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'succeeded'::text, 'failed'::text, 'refund_due'::text])));
CREATE INDEX payments_by_order ON billing.payments USING btree (order_id);
CREATE INDEX payments_refund_due ON billing.payments USING btree (tenant_id, updated_at) WHERE (state = 'refund_due'::text);
ALTER TABLE billing.payments ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON billing.payments AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE billing.payments TO billing;
GRANT SELECT ON TABLE billing.payments TO console;

CREATE TABLE billing.relay_guard (
  tenant_id uuid NOT NULL,
  day date NOT NULL,
  rearms integer NOT NULL DEFAULT 0
);
ALTER TABLE billing.relay_guard ADD CONSTRAINT relay_guard_pkey PRIMARY KEY (tenant_id, day);
ALTER TABLE billing.relay_guard ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON billing.relay_guard AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE billing.relay_guard TO billing;
GRANT SELECT ON TABLE billing.relay_guard TO console;

CREATE TABLE billing.stripe_events (
  event_id text NOT NULL,
  tenant_id uuid,
  type text NOT NULL,
  payment_id text,
  order_id uuid,
  outcome text NOT NULL,
  received_at timestamp with time zone NOT NULL DEFAULT now(),
  status smallint NOT NULL DEFAULT 200
);
ALTER TABLE billing.stripe_events ADD CONSTRAINT stripe_events_pkey PRIMARY KEY (event_id);
ALTER TABLE billing.stripe_events ADD CONSTRAINT stripe_events_status_check CHECK ((status = ANY (ARRAY[200, 422])));
ALTER TABLE billing.stripe_events ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON billing.stripe_events AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE billing.stripe_events TO billing;
GRANT SELECT ON TABLE billing.stripe_events TO console;

CREATE TABLE console.alert_episodes (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  kind text NOT NULL,
  subject text NOT NULL,
  state text NOT NULL,
  value double precision NOT NULL,
  threshold double precision NOT NULL,
  since timestamp with time zone NOT NULL,
  changed_at timestamp with time zone NOT NULL DEFAULT now(),
  resolved_at timestamp with time zone,
  acknowledged_by text,
  acknowledged_at timestamp with time zone
);
ALTER TABLE console.alert_episodes ADD CONSTRAINT alert_episodes_check CHECK (((state = 'resolved'::text) = (resolved_at IS NOT NULL)));
ALTER TABLE console.alert_episodes ADD CONSTRAINT alert_episodes_check1 CHECK (((acknowledged_by IS NULL) = (acknowledged_at IS NULL)));
ALTER TABLE console.alert_episodes ADD CONSTRAINT alert_episodes_kind_check CHECK (((length(kind) >= 1) AND (length(kind) <= 40)));
ALTER TABLE console.alert_episodes ADD CONSTRAINT alert_episodes_pkey PRIMARY KEY (id);
ALTER TABLE console.alert_episodes ADD CONSTRAINT alert_episodes_state_check CHECK ((state = ANY (ARRAY['firing'::text, 'recovering'::text, 'resolved'::text])));
ALTER TABLE console.alert_episodes ADD CONSTRAINT alert_episodes_subject_check CHECK (((length(subject) >= 1) AND (length(subject) <= 80)));
CREATE INDEX alert_episodes_by_tenant ON console.alert_episodes USING btree (tenant_id, changed_at);
CREATE UNIQUE INDEX alert_episodes_open ON console.alert_episodes USING btree (tenant_id, kind, subject) WHERE (resolved_at IS NULL);
ALTER TABLE console.alert_episodes ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON console.alert_episodes AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE console.alert_episodes TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE console.alert_episodes TO queue;
CREATE SEQUENCE console.alert_episodes_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of console.alert_episodes.id
GRANT SELECT, USAGE ON SEQUENCE console.alert_episodes_id_seq TO queue;

CREATE TABLE console.bulk_jobs (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  action text NOT NULL,
  ids bigint[] NOT NULL,
  total integer NOT NULL,
  done integer NOT NULL DEFAULT 0,
  changed integer NOT NULL DEFAULT 0,
  rate_per_second integer NOT NULL,
  reason text,
  force boolean NOT NULL DEFAULT false,
  republish boolean NOT NULL DEFAULT false,
  actor text NOT NULL,
  state text NOT NULL DEFAULT 'running'::text,
  lease_owner text,
  lease_expires_at timestamp with time zone,
  next_run_at timestamp with time zone NOT NULL DEFAULT now(),
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  finished_at timestamp with time zone
);
ALTER TABLE console.bulk_jobs ADD CONSTRAINT bulk_jobs_action_check CHECK ((action = ANY (ARRAY['redrive'::text, 'refuse'::text])));
ALTER TABLE console.bulk_jobs ADD CONSTRAINT bulk_jobs_check CHECK ((total = cardinality(ids)));
ALTER TABLE console.bulk_jobs ADD CONSTRAINT bulk_jobs_check1 CHECK (((done >= 0) AND (done <= total)));
ALTER TABLE console.bulk_jobs ADD CONSTRAINT bulk_jobs_check2 CHECK (((state = 'running'::text) = (finished_at IS NULL)));
ALTER TABLE console.bulk_jobs ADD CONSTRAINT bulk_jobs_check3 CHECK (((action <> 'refuse'::text) OR (reason IS NOT NULL)));
ALTER TABLE console.bulk_jobs ADD CONSTRAINT bulk_jobs_pkey PRIMARY KEY (id);
ALTER TABLE console.bulk_jobs ADD CONSTRAINT bulk_jobs_rate_per_second_check CHECK (((rate_per_second >= 1) AND (rate_per_second <= 1000)));
ALTER TABLE console.bulk_jobs ADD CONSTRAINT bulk_jobs_state_check CHECK ((state = ANY (ARRAY['running'::text, 'done'::text, 'cancelled'::text])));
CREATE INDEX bulk_jobs_running ON console.bulk_jobs USING btree (next_run_at) WHERE (state = 'running'::text);
ALTER TABLE console.bulk_jobs ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON console.bulk_jobs AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE console.bulk_jobs TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE console.bulk_jobs TO queue;

CREATE TABLE console.operator_actions (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  actor text NOT NULL,
  action text NOT NULL,
  target jsonb NOT NULL,
  count integer NOT NULL,
  job_id uuid,
  at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE console.operator_actions ADD CONSTRAINT operator_actions_action_check CHECK ((action = ANY (ARRAY['redrive'::text, 'refuse'::text, 'supersede'::text, 'cancel'::text, 'release'::text, 'acknowledge'::text, 'fault'::text])));
ALTER TABLE console.operator_actions ADD CONSTRAINT operator_actions_count_check CHECK ((count >= 0));
ALTER TABLE console.operator_actions ADD CONSTRAINT operator_actions_pkey PRIMARY KEY (id);
CREATE INDEX operator_actions_by_tenant ON console.operator_actions USING btree (tenant_id, at);
ALTER TABLE console.operator_actions ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON console.operator_actions AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE console.operator_actions TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE console.operator_actions TO queue;
GRANT INSERT ON TABLE console.operator_actions TO relay;
CREATE SEQUENCE console.operator_actions_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of console.operator_actions.id
GRANT SELECT, USAGE ON SEQUENCE console.operator_actions_id_seq TO queue;

CREATE TABLE crm.inbox (
  message_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  type text NOT NULL,
  received_at timestamp with time zone NOT NULL DEFAULT now(),
  status integer NOT NULL,
  outcome jsonb NOT NULL DEFAULT '{}'::jsonb,
  aggregate_id text,
  aggregate_version integer,
  repeats integer NOT NULL DEFAULT 0
);
ALTER TABLE crm.inbox ADD CONSTRAINT inbox_pkey PRIMARY KEY (message_id);
ALTER TABLE crm.inbox ADD CONSTRAINT inbox_repeats_check CHECK ((repeats >= 0));
ALTER TABLE crm.inbox ADD CONSTRAINT inbox_status_check CHECK ((status = ANY (ARRAY[200, 422])));
CREATE INDEX inbox_by_aggregate ON crm.inbox USING btree (aggregate_id, aggregate_version) WHERE (aggregate_id IS NOT NULL);
CREATE INDEX inbox_received_by_time ON crm.inbox USING brin (received_at);
ALTER TABLE crm.inbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON crm.inbox AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE crm.inbox TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE crm.inbox TO crm;

CREATE TABLE crm.interactions (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  email text NOT NULL,
  order_id uuid NOT NULL,
  kind text NOT NULL,
  note text NOT NULL,
  at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE crm.interactions ADD CONSTRAINT interactions_message_id_key UNIQUE (message_id);
ALTER TABLE crm.interactions ADD CONSTRAINT interactions_pkey PRIMARY KEY (id);
ALTER TABLE crm.interactions ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON crm.interactions AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE crm.interactions TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE crm.interactions TO crm;
CREATE SEQUENCE crm.interactions_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of crm.interactions.id
GRANT SELECT, USAGE ON SEQUENCE crm.interactions_id_seq TO crm;

CREATE TABLE crm.order_violations (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  type text NOT NULL,
  aggregate_id text NOT NULL,
  arrived_version integer NOT NULL,
  applied_version integer NOT NULL,
  at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE crm.order_violations ADD CONSTRAINT order_violations_check CHECK ((applied_version > arrived_version));
ALTER TABLE crm.order_violations ADD CONSTRAINT order_violations_message_id_key UNIQUE (message_id);
ALTER TABLE crm.order_violations ADD CONSTRAINT order_violations_pkey PRIMARY KEY (id);
CREATE INDEX order_violations_by_tenant ON crm.order_violations USING btree (tenant_id, at);
ALTER TABLE crm.order_violations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON crm.order_violations AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE crm.order_violations TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE crm.order_violations TO crm;
CREATE SEQUENCE crm.order_violations_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of crm.order_violations.id
GRANT SELECT, USAGE ON SEQUENCE crm.order_violations_id_seq TO crm;

CREATE TABLE crm.refusals (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  type text NOT NULL,
  reason text NOT NULL,
  refused_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE crm.refusals ADD CONSTRAINT refusals_message_id_key UNIQUE (message_id);
ALTER TABLE crm.refusals ADD CONSTRAINT refusals_pkey PRIMARY KEY (id);
ALTER TABLE crm.refusals ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON crm.refusals AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE crm.refusals TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE crm.refusals TO crm;
CREATE SEQUENCE crm.refusals_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of crm.refusals.id
GRANT SELECT, USAGE ON SEQUENCE crm.refusals_id_seq TO crm;

CREATE TABLE customers.history (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  email text NOT NULL,
  name text NOT NULL,
  order_id uuid NOT NULL,
  event text NOT NULL,
  total_cents integer NOT NULL,
  at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE customers.history ADD CONSTRAINT history_message_id_key UNIQUE (message_id);
ALTER TABLE customers.history ADD CONSTRAINT history_pkey PRIMARY KEY (id);
CREATE INDEX history_by_email ON customers.history USING btree (tenant_id, email);
ALTER TABLE customers.history ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON customers.history AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE customers.history TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE customers.history TO customers;
CREATE SEQUENCE customers.history_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of customers.history.id
GRANT SELECT, USAGE ON SEQUENCE customers.history_id_seq TO customers;

CREATE TABLE customers.inbox (
  message_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  type text NOT NULL,
  received_at timestamp with time zone NOT NULL DEFAULT now(),
  status integer NOT NULL,
  outcome jsonb NOT NULL DEFAULT '{}'::jsonb,
  aggregate_id text,
  aggregate_version integer,
  repeats integer NOT NULL DEFAULT 0
);
ALTER TABLE customers.inbox ADD CONSTRAINT inbox_pkey PRIMARY KEY (message_id);
ALTER TABLE customers.inbox ADD CONSTRAINT inbox_repeats_check CHECK ((repeats >= 0));
ALTER TABLE customers.inbox ADD CONSTRAINT inbox_status_check CHECK ((status = ANY (ARRAY[200, 422])));
CREATE INDEX inbox_by_aggregate ON customers.inbox USING btree (aggregate_id, aggregate_version) WHERE (aggregate_id IS NOT NULL);
CREATE INDEX inbox_received_by_time ON customers.inbox USING brin (received_at);
ALTER TABLE customers.inbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON customers.inbox AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE customers.inbox TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE customers.inbox TO customers;

CREATE TABLE customers.order_violations (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  type text NOT NULL,
  aggregate_id text NOT NULL,
  arrived_version integer NOT NULL,
  applied_version integer NOT NULL,
  at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE customers.order_violations ADD CONSTRAINT order_violations_check CHECK ((applied_version > arrived_version));
ALTER TABLE customers.order_violations ADD CONSTRAINT order_violations_message_id_key UNIQUE (message_id);
ALTER TABLE customers.order_violations ADD CONSTRAINT order_violations_pkey PRIMARY KEY (id);
CREATE INDEX order_violations_by_tenant ON customers.order_violations USING btree (tenant_id, at);
ALTER TABLE customers.order_violations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON customers.order_violations AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE customers.order_violations TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE customers.order_violations TO customers;
CREATE SEQUENCE customers.order_violations_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of customers.order_violations.id
GRANT SELECT, USAGE ON SEQUENCE customers.order_violations_id_seq TO customers;

CREATE TABLE customers.refusals (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  type text NOT NULL,
  reason text NOT NULL,
  refused_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE customers.refusals ADD CONSTRAINT refusals_message_id_key UNIQUE (message_id);
ALTER TABLE customers.refusals ADD CONSTRAINT refusals_pkey PRIMARY KEY (id);
ALTER TABLE customers.refusals ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON customers.refusals AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE customers.refusals TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE customers.refusals TO customers;
CREATE SEQUENCE customers.refusals_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of customers.refusals.id
GRANT SELECT, USAGE ON SEQUENCE customers.refusals_id_seq TO customers;

CREATE TABLE dispatch.inbox (
  message_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  type text NOT NULL,
  received_at timestamp with time zone NOT NULL DEFAULT now(),
  status integer NOT NULL,
  outcome jsonb NOT NULL DEFAULT '{}'::jsonb,
  aggregate_id text,
  aggregate_version integer,
  repeats integer NOT NULL DEFAULT 0
);
ALTER TABLE dispatch.inbox ADD CONSTRAINT inbox_pkey PRIMARY KEY (message_id);
ALTER TABLE dispatch.inbox ADD CONSTRAINT inbox_repeats_check CHECK ((repeats >= 0));
ALTER TABLE dispatch.inbox ADD CONSTRAINT inbox_status_check CHECK ((status = ANY (ARRAY[200, 422])));
CREATE INDEX inbox_by_aggregate ON dispatch.inbox USING btree (aggregate_id, aggregate_version) WHERE (aggregate_id IS NOT NULL);
CREATE INDEX inbox_received_by_time ON dispatch.inbox USING brin (received_at);
ALTER TABLE dispatch.inbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON dispatch.inbox AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE dispatch.inbox TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE dispatch.inbox TO dispatch;

CREATE TABLE dispatch.order_violations (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  type text NOT NULL,
  aggregate_id text NOT NULL,
  arrived_version integer NOT NULL,
  applied_version integer NOT NULL,
  at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE dispatch.order_violations ADD CONSTRAINT order_violations_check CHECK ((applied_version > arrived_version));
ALTER TABLE dispatch.order_violations ADD CONSTRAINT order_violations_message_id_key UNIQUE (message_id);
ALTER TABLE dispatch.order_violations ADD CONSTRAINT order_violations_pkey PRIMARY KEY (id);
CREATE INDEX order_violations_by_tenant ON dispatch.order_violations USING btree (tenant_id, at);
ALTER TABLE dispatch.order_violations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON dispatch.order_violations AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE dispatch.order_violations TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE dispatch.order_violations TO dispatch;
CREATE SEQUENCE dispatch.order_violations_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of dispatch.order_violations.id
GRANT SELECT, USAGE ON SEQUENCE dispatch.order_violations_id_seq TO dispatch;

CREATE TABLE dispatch.refusals (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  type text NOT NULL,
  reason text NOT NULL,
  refused_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE dispatch.refusals ADD CONSTRAINT refusals_message_id_key UNIQUE (message_id);
ALTER TABLE dispatch.refusals ADD CONSTRAINT refusals_pkey PRIMARY KEY (id);
ALTER TABLE dispatch.refusals ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON dispatch.refusals AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE dispatch.refusals TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE dispatch.refusals TO dispatch;
CREATE SEQUENCE dispatch.refusals_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of dispatch.refusals.id
GRANT SELECT, USAGE ON SEQUENCE dispatch.refusals_id_seq TO dispatch;

CREATE TABLE dispatch.stops (
  order_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  state text NOT NULL,
  version integer NOT NULL,
  customer_name text,
  day date,
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE dispatch.stops ADD CONSTRAINT stops_pkey PRIMARY KEY (order_id);
ALTER TABLE dispatch.stops ADD CONSTRAINT stops_state_check CHECK ((state = ANY (ARRAY['confirmed'::text, 'cancelled'::text])));
ALTER TABLE dispatch.stops ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON dispatch.stops AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE dispatch.stops TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE dispatch.stops TO dispatch;

CREATE TABLE kitchen.cards (
  order_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  state text NOT NULL,
  version integer NOT NULL,
  items jsonb NOT NULL DEFAULT '[]'::jsonb,
  day date,
  placed_message_id uuid,
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE kitchen.cards ADD CONSTRAINT cards_pkey PRIMARY KEY (order_id);
ALTER TABLE kitchen.cards ADD CONSTRAINT cards_state_check CHECK ((state = ANY (ARRAY['new'::text, 'confirmed'::text, 'cancelled'::text])));
CREATE INDEX cards_by_tenant ON kitchen.cards USING btree (tenant_id, updated_at DESC);
ALTER TABLE kitchen.cards ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON kitchen.cards AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE kitchen.cards TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE kitchen.cards TO kitchen;

CREATE TABLE kitchen.inbox (
  message_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  type text NOT NULL,
  received_at timestamp with time zone NOT NULL DEFAULT now(),
  status integer NOT NULL,
  outcome jsonb NOT NULL DEFAULT '{}'::jsonb,
  aggregate_id text,
  aggregate_version integer,
  repeats integer NOT NULL DEFAULT 0
);
ALTER TABLE kitchen.inbox ADD CONSTRAINT inbox_pkey PRIMARY KEY (message_id);
ALTER TABLE kitchen.inbox ADD CONSTRAINT inbox_repeats_check CHECK ((repeats >= 0));
ALTER TABLE kitchen.inbox ADD CONSTRAINT inbox_status_check CHECK ((status = ANY (ARRAY[200, 422])));
CREATE INDEX inbox_by_aggregate ON kitchen.inbox USING btree (aggregate_id, aggregate_version) WHERE (aggregate_id IS NOT NULL);
CREATE INDEX inbox_received_by_time ON kitchen.inbox USING brin (received_at);
ALTER TABLE kitchen.inbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON kitchen.inbox AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE kitchen.inbox TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE kitchen.inbox TO kitchen;

CREATE TABLE kitchen.order_violations (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  type text NOT NULL,
  aggregate_id text NOT NULL,
  arrived_version integer NOT NULL,
  applied_version integer NOT NULL,
  at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE kitchen.order_violations ADD CONSTRAINT order_violations_check CHECK ((applied_version > arrived_version));
ALTER TABLE kitchen.order_violations ADD CONSTRAINT order_violations_message_id_key UNIQUE (message_id);
ALTER TABLE kitchen.order_violations ADD CONSTRAINT order_violations_pkey PRIMARY KEY (id);
CREATE INDEX order_violations_by_tenant ON kitchen.order_violations USING btree (tenant_id, at);
ALTER TABLE kitchen.order_violations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON kitchen.order_violations AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE kitchen.order_violations TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE kitchen.order_violations TO kitchen;
CREATE SEQUENCE kitchen.order_violations_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of kitchen.order_violations.id
GRANT SELECT, USAGE ON SEQUENCE kitchen.order_violations_id_seq TO kitchen;

CREATE TABLE kitchen.refusals (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  type text NOT NULL,
  reason text NOT NULL,
  refused_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE kitchen.refusals ADD CONSTRAINT refusals_message_id_key UNIQUE (message_id);
ALTER TABLE kitchen.refusals ADD CONSTRAINT refusals_pkey PRIMARY KEY (id);
ALTER TABLE kitchen.refusals ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON kitchen.refusals AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE kitchen.refusals TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE kitchen.refusals TO kitchen;
CREATE SEQUENCE kitchen.refusals_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of kitchen.refusals.id
GRANT SELECT, USAGE ON SEQUENCE kitchen.refusals_id_seq TO kitchen;

CREATE TABLE lab_printer.inbox (
  message_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  type text NOT NULL,
  received_at timestamp with time zone NOT NULL DEFAULT now(),
  status integer NOT NULL,
  outcome jsonb NOT NULL DEFAULT '{}'::jsonb,
  aggregate_id text,
  aggregate_version integer,
  repeats integer NOT NULL DEFAULT 0
);
ALTER TABLE lab_printer.inbox ADD CONSTRAINT inbox_pkey PRIMARY KEY (message_id);
ALTER TABLE lab_printer.inbox ADD CONSTRAINT inbox_repeats_check CHECK ((repeats >= 0));
ALTER TABLE lab_printer.inbox ADD CONSTRAINT inbox_status_check CHECK ((status = ANY (ARRAY[200, 422])));
CREATE INDEX inbox_by_aggregate ON lab_printer.inbox USING btree (aggregate_id, aggregate_version) WHERE (aggregate_id IS NOT NULL);
CREATE INDEX inbox_received_by_time ON lab_printer.inbox USING brin (received_at);
ALTER TABLE lab_printer.inbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON lab_printer.inbox AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE lab_printer.inbox TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE lab_printer.inbox TO lab_printer;

CREATE TABLE lab_printer.order_violations (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  type text NOT NULL,
  aggregate_id text NOT NULL,
  arrived_version integer NOT NULL,
  applied_version integer NOT NULL,
  at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE lab_printer.order_violations ADD CONSTRAINT order_violations_check CHECK ((applied_version > arrived_version));
ALTER TABLE lab_printer.order_violations ADD CONSTRAINT order_violations_message_id_key UNIQUE (message_id);
ALTER TABLE lab_printer.order_violations ADD CONSTRAINT order_violations_pkey PRIMARY KEY (id);
CREATE INDEX order_violations_by_tenant ON lab_printer.order_violations USING btree (tenant_id, at);
ALTER TABLE lab_printer.order_violations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON lab_printer.order_violations AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE lab_printer.order_violations TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE lab_printer.order_violations TO lab_printer;
CREATE SEQUENCE lab_printer.order_violations_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of lab_printer.order_violations.id
GRANT SELECT, USAGE ON SEQUENCE lab_printer.order_violations_id_seq TO lab_printer;

CREATE TABLE lab_printer.refusals (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  type text NOT NULL,
  reason text NOT NULL,
  refused_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE lab_printer.refusals ADD CONSTRAINT refusals_message_id_key UNIQUE (message_id);
ALTER TABLE lab_printer.refusals ADD CONSTRAINT refusals_pkey PRIMARY KEY (id);
ALTER TABLE lab_printer.refusals ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON lab_printer.refusals AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE lab_printer.refusals TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE lab_printer.refusals TO lab_printer;
CREATE SEQUENCE lab_printer.refusals_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of lab_printer.refusals.id
GRANT SELECT, USAGE ON SEQUENCE lab_printer.refusals_id_seq TO lab_printer;

CREATE TABLE lab_printer.runs (
  tenant_id uuid NOT NULL,
  settings jsonb NOT NULL,
  timeline jsonb NOT NULL,
  queue_figures jsonb NOT NULL,
  ran_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE lab_printer.runs ADD CONSTRAINT runs_pkey PRIMARY KEY (tenant_id);
ALTER TABLE lab_printer.runs ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON lab_printer.runs AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE lab_printer.runs TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE lab_printer.runs TO lab_printer;

CREATE TABLE lab_printer.tickets (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  order_no integer NOT NULL,
  worker integer NOT NULL,
  attempt integer NOT NULL,
  printed_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE lab_printer.tickets ADD CONSTRAINT tickets_pkey PRIMARY KEY (id);
CREATE INDEX tickets_by_tenant ON lab_printer.tickets USING btree (tenant_id, id);
ALTER TABLE lab_printer.tickets ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON lab_printer.tickets AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE lab_printer.tickets TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE lab_printer.tickets TO lab_printer;
CREATE SEQUENCE lab_printer.tickets_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of lab_printer.tickets.id
GRANT SELECT, USAGE ON SEQUENCE lab_printer.tickets_id_seq TO lab_printer;

CREATE TABLE lab_receiver.inbox (
  message_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  type text NOT NULL,
  received_at timestamp with time zone NOT NULL DEFAULT now(),
  status integer NOT NULL,
  outcome jsonb NOT NULL DEFAULT '{}'::jsonb,
  aggregate_id text,
  aggregate_version integer,
  repeats integer NOT NULL DEFAULT 0
);
ALTER TABLE lab_receiver.inbox ADD CONSTRAINT inbox_pkey PRIMARY KEY (message_id);
ALTER TABLE lab_receiver.inbox ADD CONSTRAINT inbox_repeats_check CHECK ((repeats >= 0));
ALTER TABLE lab_receiver.inbox ADD CONSTRAINT inbox_status_check CHECK ((status = ANY (ARRAY[200, 422])));
CREATE INDEX inbox_by_aggregate ON lab_receiver.inbox USING btree (aggregate_id, aggregate_version) WHERE (aggregate_id IS NOT NULL);
CREATE INDEX inbox_received_by_time ON lab_receiver.inbox USING brin (received_at);
ALTER TABLE lab_receiver.inbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON lab_receiver.inbox AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE lab_receiver.inbox TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE lab_receiver.inbox TO lab_receiver;

CREATE TABLE lab_receiver.jobs (
  tenant_id uuid NOT NULL,
  order_id text NOT NULL,
  message_id uuid NOT NULL,
  label text NOT NULL,
  state text NOT NULL,
  version integer NOT NULL,
  applied_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE lab_receiver.jobs ADD CONSTRAINT jobs_pkey PRIMARY KEY (tenant_id, order_id);
ALTER TABLE lab_receiver.jobs ADD CONSTRAINT jobs_state_check CHECK ((state = ANY (ARRAY['scheduled'::text, 'cancelled'::text])));
ALTER TABLE lab_receiver.jobs ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON lab_receiver.jobs AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE lab_receiver.jobs TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE lab_receiver.jobs TO lab_receiver;

CREATE TABLE lab_receiver.order_violations (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  type text NOT NULL,
  aggregate_id text NOT NULL,
  arrived_version integer NOT NULL,
  applied_version integer NOT NULL,
  at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE lab_receiver.order_violations ADD CONSTRAINT order_violations_check CHECK ((applied_version > arrived_version));
ALTER TABLE lab_receiver.order_violations ADD CONSTRAINT order_violations_message_id_key UNIQUE (message_id);
ALTER TABLE lab_receiver.order_violations ADD CONSTRAINT order_violations_pkey PRIMARY KEY (id);
CREATE INDEX order_violations_by_tenant ON lab_receiver.order_violations USING btree (tenant_id, at);
ALTER TABLE lab_receiver.order_violations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON lab_receiver.order_violations AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE lab_receiver.order_violations TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE lab_receiver.order_violations TO lab_receiver;
CREATE SEQUENCE lab_receiver.order_violations_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of lab_receiver.order_violations.id
GRANT SELECT, USAGE ON SEQUENCE lab_receiver.order_violations_id_seq TO lab_receiver;

CREATE TABLE lab_receiver.refusals (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  type text NOT NULL,
  reason text NOT NULL,
  refused_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE lab_receiver.refusals ADD CONSTRAINT refusals_message_id_key UNIQUE (message_id);
ALTER TABLE lab_receiver.refusals ADD CONSTRAINT refusals_pkey PRIMARY KEY (id);
ALTER TABLE lab_receiver.refusals ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON lab_receiver.refusals AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE lab_receiver.refusals TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE lab_receiver.refusals TO lab_receiver;
CREATE SEQUENCE lab_receiver.refusals_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of lab_receiver.refusals.id
GRANT SELECT, USAGE ON SEQUENCE lab_receiver.refusals_id_seq TO lab_receiver;

CREATE TABLE lab_sender.orders (
  tenant_id uuid NOT NULL,
  order_id text NOT NULL,
  state text NOT NULL DEFAULT 'placed'::text,
  version integer NOT NULL DEFAULT 1,
  created_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE lab_sender.orders ADD CONSTRAINT orders_order_id_check CHECK ((order_id ~ '^O[0-9]{1,6}$'::text));
ALTER TABLE lab_sender.orders ADD CONSTRAINT orders_pkey PRIMARY KEY (tenant_id, order_id);
ALTER TABLE lab_sender.orders ADD CONSTRAINT orders_state_check CHECK ((state = ANY (ARRAY['placed'::text, 'cancelled'::text])));
ALTER TABLE lab_sender.orders ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON lab_sender.orders AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE lab_sender.orders TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE lab_sender.orders TO lab_sender;

CREATE TABLE lab_sender.outbox (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  type text NOT NULL,
  envelope jsonb NOT NULL,
  state text NOT NULL DEFAULT 'pending'::text,
  attempts integer NOT NULL DEFAULT 0,
  last_error text,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  next_attempt_at timestamp with time zone NOT NULL DEFAULT now(),
  lease_owner text,
  lease_expires_at timestamp with time zone
);
ALTER TABLE lab_sender.outbox ADD CONSTRAINT outbox_check CHECK (((state = 'claimed'::text) = (lease_owner IS NOT NULL)));
ALTER TABLE lab_sender.outbox ADD CONSTRAINT outbox_pkey PRIMARY KEY (message_id);
ALTER TABLE lab_sender.outbox ADD CONSTRAINT outbox_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'claimed'::text])));
CREATE INDEX outbox_retry ON lab_sender.outbox USING btree (tenant_id, next_attempt_at) WHERE ((state = 'pending'::text) AND (attempts > 0));
CREATE TRIGGER outbox_immutable BEFORE UPDATE OF envelope, message_id ON lab_sender.outbox FOR EACH ROW EXECUTE FUNCTION platform.forbid_envelope_change();
ALTER TABLE lab_sender.outbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON lab_sender.outbox AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE lab_sender.outbox TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE lab_sender.outbox TO lab_sender;
GRANT SELECT, UPDATE, DELETE ON TABLE lab_sender.outbox TO relay;
CREATE SEQUENCE lab_sender.outbox_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of lab_sender.outbox.id
GRANT SELECT, USAGE ON SEQUENCE lab_sender.outbox_id_seq TO lab_sender;

CREATE TABLE lab_sender.relay_guard (
  tenant_id uuid NOT NULL,
  day date NOT NULL,
  rearms integer NOT NULL DEFAULT 0
);
ALTER TABLE lab_sender.relay_guard ADD CONSTRAINT relay_guard_pkey PRIMARY KEY (tenant_id, day);
ALTER TABLE lab_sender.relay_guard ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON lab_sender.relay_guard AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE lab_sender.relay_guard TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE lab_sender.relay_guard TO lab_sender;

CREATE TABLE orders.commands_seen (
  tenant_id uuid NOT NULL,
  idempotency_key text NOT NULL,
  request_hash text NOT NULL,
  order_id uuid NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE orders.commands_seen ADD CONSTRAINT commands_seen_pkey PRIMARY KEY (tenant_id, idempotency_key);
ALTER TABLE orders.commands_seen ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON orders.commands_seen AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE orders.commands_seen TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE orders.commands_seen TO orders;

CREATE TABLE orders.day_counts (
  tenant_id uuid NOT NULL,
  day date NOT NULL,
  sku text NOT NULL,
  qty integer NOT NULL
);
ALTER TABLE orders.day_counts ADD CONSTRAINT day_counts_pkey PRIMARY KEY (tenant_id, day, sku);
ALTER TABLE orders.day_counts ADD CONSTRAINT day_counts_qty_check CHECK ((qty >= 0));
ALTER TABLE orders.day_counts ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON orders.day_counts AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE orders.day_counts TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE orders.day_counts TO orders;

CREATE TABLE orders.events (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  order_id uuid NOT NULL,
  type text NOT NULL,
  version integer NOT NULL,
  message_id uuid,
  payload jsonb NOT NULL DEFAULT '{}'::jsonb,
  at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE orders.events ADD CONSTRAINT events_order_id_fkey FOREIGN KEY (order_id) REFERENCES orders.orders(id);
ALTER TABLE orders.events ADD CONSTRAINT events_pkey PRIMARY KEY (id);
CREATE INDEX events_by_order ON orders.events USING btree (order_id, id);
CREATE INDEX events_needing_refund ON orders.events USING btree (tenant_id, at) WHERE ((payload ->> 'action'::text) = 'refund'::text);
ALTER TABLE orders.events ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON orders.events AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE orders.events TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE orders.events TO orders;
CREATE SEQUENCE orders.events_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of orders.events.id
GRANT SELECT, USAGE ON SEQUENCE orders.events_id_seq TO orders;

CREATE TABLE orders.inbox (
  message_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  type text NOT NULL,
  received_at timestamp with time zone NOT NULL DEFAULT now(),
  status integer NOT NULL,
  outcome jsonb NOT NULL DEFAULT '{}'::jsonb,
  aggregate_id text,
  aggregate_version integer,
  repeats integer NOT NULL DEFAULT 0
);
ALTER TABLE orders.inbox ADD CONSTRAINT inbox_pkey PRIMARY KEY (message_id);
ALTER TABLE orders.inbox ADD CONSTRAINT inbox_repeats_check CHECK ((repeats >= 0));
ALTER TABLE orders.inbox ADD CONSTRAINT inbox_status_check CHECK ((status = ANY (ARRAY[200, 422])));
CREATE INDEX inbox_by_aggregate ON orders.inbox USING btree (aggregate_id, aggregate_version) WHERE (aggregate_id IS NOT NULL);
CREATE INDEX inbox_received_by_time ON orders.inbox USING brin (received_at);
ALTER TABLE orders.inbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON orders.inbox AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE orders.inbox TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE orders.inbox TO orders;

CREATE TABLE orders.lines (
  order_id uuid NOT NULL,
  sku text NOT NULL,
  tenant_id uuid NOT NULL,
  name text NOT NULL,
  qty integer NOT NULL,
  unit_cents integer NOT NULL
);
ALTER TABLE orders.lines ADD CONSTRAINT lines_order_id_fkey FOREIGN KEY (order_id) REFERENCES orders.orders(id);
ALTER TABLE orders.lines ADD CONSTRAINT lines_pkey PRIMARY KEY (order_id, sku);
ALTER TABLE orders.lines ADD CONSTRAINT lines_qty_check CHECK (((qty >= 1) AND (qty <= 50)));
ALTER TABLE orders.lines ADD CONSTRAINT lines_unit_cents_check CHECK ((unit_cents >= 0));
ALTER TABLE orders.lines ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON orders.lines AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE orders.lines TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE orders.lines TO orders;

CREATE TABLE orders.order_violations (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  type text NOT NULL,
  aggregate_id text NOT NULL,
  arrived_version integer NOT NULL,
  applied_version integer NOT NULL,
  at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE orders.order_violations ADD CONSTRAINT order_violations_check CHECK ((applied_version > arrived_version));
ALTER TABLE orders.order_violations ADD CONSTRAINT order_violations_message_id_key UNIQUE (message_id);
ALTER TABLE orders.order_violations ADD CONSTRAINT order_violations_pkey PRIMARY KEY (id);
CREATE INDEX order_violations_by_tenant ON orders.order_violations USING btree (tenant_id, at);
ALTER TABLE orders.order_violations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON orders.order_violations AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE orders.order_violations TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE orders.order_violations TO orders;
CREATE SEQUENCE orders.order_violations_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of orders.order_violations.id
GRANT SELECT, USAGE ON SEQUENCE orders.order_violations_id_seq TO orders;

CREATE TABLE orders.orders (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  state text NOT NULL DEFAULT 'placed'::text,
  version integer NOT NULL DEFAULT 1,
  customer_name text NOT NULL,
  customer_email text NOT NULL,
  fulfilment text NOT NULL,
  day date NOT NULL,
  total_cents integer NOT NULL,
  payment_ref text,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  number text GENERATED ALWAYS AS (upper("right"((id)::text, 6))) STORED,
  email_key text GENERATED ALWAYS AS (lower(customer_email)) STORED
);
ALTER TABLE orders.orders ADD CONSTRAINT orders_fulfilment_check CHECK ((fulfilment = ANY (ARRAY['pickup'::text, 'delivery'::text])));
ALTER TABLE orders.orders ADD CONSTRAINT orders_pkey PRIMARY KEY (id);
ALTER TABLE orders.orders ADD CONSTRAINT orders_state_check CHECK ((state = ANY (ARRAY['placed'::text, 'payment_failed'::text, 'paid'::text, 'cancelled'::text])));
ALTER TABLE orders.orders ADD CONSTRAINT orders_total_cents_check CHECK ((total_cents >= 0));
CREATE INDEX orders_by_email ON orders.orders USING btree (tenant_id, email_key text_pattern_ops);
CREATE INDEX orders_by_number ON orders.orders USING btree (number);
ALTER TABLE orders.orders ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON orders.orders AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE orders.orders TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE orders.orders TO orders;

CREATE TABLE orders.outbox (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  type text NOT NULL,
  envelope jsonb NOT NULL,
  state text NOT NULL DEFAULT 'pending'::text,
  attempts integer NOT NULL DEFAULT 0,
  last_error text,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  next_attempt_at timestamp with time zone NOT NULL DEFAULT now(),
  lease_owner text,
  lease_expires_at timestamp with time zone
);
ALTER TABLE orders.outbox ADD CONSTRAINT outbox_check CHECK (((state = 'claimed'::text) = (lease_owner IS NOT NULL)));
ALTER TABLE orders.outbox ADD CONSTRAINT outbox_pkey PRIMARY KEY (message_id);
ALTER TABLE orders.outbox ADD CONSTRAINT outbox_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'claimed'::text])));
CREATE INDEX outbox_retry ON orders.outbox USING btree (tenant_id, next_attempt_at) WHERE ((state = 'pending'::text) AND (attempts > 0));
CREATE TRIGGER outbox_immutable BEFORE UPDATE OF envelope, message_id ON orders.outbox FOR EACH ROW EXECUTE FUNCTION platform.forbid_envelope_change();
ALTER TABLE orders.outbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON orders.outbox AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE orders.outbox TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE orders.outbox TO orders;
GRANT SELECT, UPDATE, DELETE ON TABLE orders.outbox TO relay;
CREATE SEQUENCE orders.outbox_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of orders.outbox.id
GRANT SELECT, USAGE ON SEQUENCE orders.outbox_id_seq TO orders;

CREATE TABLE orders.refusals (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  type text NOT NULL,
  reason text NOT NULL,
  refused_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE orders.refusals ADD CONSTRAINT refusals_message_id_key UNIQUE (message_id);
ALTER TABLE orders.refusals ADD CONSTRAINT refusals_pkey PRIMARY KEY (id);
ALTER TABLE orders.refusals ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON orders.refusals AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE orders.refusals TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE orders.refusals TO orders;
CREATE SEQUENCE orders.refusals_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of orders.refusals.id
GRANT SELECT, USAGE ON SEQUENCE orders.refusals_id_seq TO orders;

CREATE TABLE orders.relay_guard (
  tenant_id uuid NOT NULL,
  day date NOT NULL,
  rearms integer NOT NULL DEFAULT 0
);
ALTER TABLE orders.relay_guard ADD CONSTRAINT relay_guard_pkey PRIMARY KEY (tenant_id, day);
ALTER TABLE orders.relay_guard ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON orders.relay_guard AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE orders.relay_guard TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE orders.relay_guard TO orders;

CREATE TABLE platform.closed_refusals (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  refused_at timestamp with time zone NOT NULL DEFAULT now(),
  refused_by text NOT NULL,
  what text NOT NULL,
  key text,
  reason text NOT NULL
);
ALTER TABLE platform.closed_refusals ADD CONSTRAINT closed_refusals_pkey PRIMARY KEY (id);
ALTER TABLE platform.closed_refusals ADD CONSTRAINT closed_refusals_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES platform.tenants(id);
ALTER TABLE platform.closed_refusals ADD CONSTRAINT closed_refusals_what_check CHECK ((what = ANY (ARRAY['delivery'::text, 'message'::text, 'webhook'::text, 'request'::text])));
CREATE INDEX closed_refusals_by_tenant ON platform.closed_refusals USING btree (tenant_id, id);
GRANT SELECT ON TABLE platform.closed_refusals TO console;
GRANT INSERT ON TABLE platform.closed_refusals TO queue;
CREATE SEQUENCE platform.closed_refusals_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of platform.closed_refusals.id

CREATE TABLE platform.faults (
  tenant_id uuid NOT NULL,
  name text NOT NULL,
  enabled boolean NOT NULL DEFAULT false,
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE platform.faults ADD CONSTRAINT faults_name_check CHECK ((name ~ '^[a-zA-Z]{1,40}$'::text));
ALTER TABLE platform.faults ADD CONSTRAINT faults_pkey PRIMARY KEY (tenant_id, name);
ALTER TABLE platform.faults ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON platform.faults AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE platform.faults TO billing;
GRANT SELECT ON TABLE platform.faults TO console;
GRANT SELECT ON TABLE platform.faults TO crm;
GRANT SELECT ON TABLE platform.faults TO customers;
GRANT SELECT ON TABLE platform.faults TO dispatch;
GRANT SELECT ON TABLE platform.faults TO kitchen;
GRANT SELECT ON TABLE platform.faults TO lab_sender;
GRANT SELECT ON TABLE platform.faults TO orders;
GRANT SELECT ON TABLE platform.faults TO queue;
GRANT SELECT ON TABLE platform.faults TO receipts;
GRANT SELECT ON TABLE platform.faults TO relay;
GRANT SELECT ON TABLE platform.faults TO schedule;

CREATE TABLE platform.sessions (
  id text NOT NULL,
  tenant_id uuid NOT NULL,
  name text,
  csrf_token text NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  last_seen_at timestamp with time zone NOT NULL DEFAULT now(),
  ended_at timestamp with time zone
);
ALTER TABLE platform.sessions ADD CONSTRAINT sessions_name_check CHECK (((length(name) >= 1) AND (length(name) <= 80)));
ALTER TABLE platform.sessions ADD CONSTRAINT sessions_pkey PRIMARY KEY (id);
ALTER TABLE platform.sessions ADD CONSTRAINT sessions_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES platform.tenants(id);
CREATE INDEX sessions_by_tenant ON platform.sessions USING btree (tenant_id);

CREATE TABLE platform.tenants (
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  name text NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  wiped_at timestamp with time zone,
  wiping_at timestamp with time zone
);
ALTER TABLE platform.tenants ADD CONSTRAINT tenants_name_check CHECK (((length(name) >= 1) AND (length(name) <= 80)));
ALTER TABLE platform.tenants ADD CONSTRAINT tenants_pkey PRIMARY KEY (id);
ALTER TABLE platform.tenants ADD CONSTRAINT tenants_wiped_after_wiping CHECK (((wiped_at IS NULL) OR (wiping_at IS NOT NULL)));
CREATE INDEX tenants_wiping ON platform.tenants USING btree (id) WHERE ((wiping_at IS NOT NULL) AND (wiped_at IS NULL));
GRANT SELECT ON TABLE platform.tenants TO billing;
GRANT SELECT ON TABLE platform.tenants TO console;
GRANT SELECT ON TABLE platform.tenants TO crm;
GRANT SELECT ON TABLE platform.tenants TO customers;
GRANT SELECT ON TABLE platform.tenants TO dispatch;
GRANT SELECT ON TABLE platform.tenants TO kitchen;
GRANT SELECT ON TABLE platform.tenants TO orders;
GRANT SELECT ON TABLE platform.tenants TO queue;
GRANT SELECT ON TABLE platform.tenants TO receipts;
GRANT SELECT ON TABLE platform.tenants TO relay;
GRANT SELECT ON TABLE platform.tenants TO schedule;

CREATE TABLE platform.wipes (
  cutoff timestamp with time zone NOT NULL,
  started_at timestamp with time zone NOT NULL DEFAULT now(),
  finished_at timestamp with time zone,
  sandboxes integer NOT NULL DEFAULT 0,
  rows_deleted bigint NOT NULL DEFAULT 0,
  error text
);
ALTER TABLE platform.wipes ADD CONSTRAINT wipes_pkey PRIMARY KEY (cutoff);

CREATE TABLE public.messaging_migrations (
  name text NOT NULL,
  checksum text NOT NULL,
  applied_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE public.messaging_migrations ADD CONSTRAINT messaging_migrations_pkey PRIMARY KEY (name);

CREATE TABLE public.schema_migrations (
  name text NOT NULL,
  checksum text NOT NULL,
  applied_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE public.schema_migrations ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (name);

CREATE TABLE queue.actions (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  delivery_id bigint NOT NULL,
  action text NOT NULL,
  actor text NOT NULL,
  reason text,
  at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE queue.actions ADD CONSTRAINT actions_action_check CHECK ((action = ANY (ARRAY['redrive'::text, 'refuse'::text])));
ALTER TABLE queue.actions ADD CONSTRAINT actions_delivery_id_fkey FOREIGN KEY (delivery_id) REFERENCES queue.deliveries(id);
ALTER TABLE queue.actions ADD CONSTRAINT actions_pkey PRIMARY KEY (id);
CREATE INDEX actions_by_delivery ON queue.actions USING btree (delivery_id, id);
ALTER TABLE queue.actions ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON queue.actions AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE queue.actions TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE queue.actions TO queue;
CREATE SEQUENCE queue.actions_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of queue.actions.id
GRANT SELECT, USAGE ON SEQUENCE queue.actions_id_seq TO queue;

CREATE VIEW queue.attempt_log AS
 SELECT a.id,
    a.tenant_id,
    a.delivery_id,
    d.subscriber,
    a.attempt,
    a.started_at,
    a.duration_ms,
    a.status,
    a.outcome,
    a.error
   FROM queue.attempts a
     JOIN queue.deliveries d ON d.id = a.delivery_id
UNION ALL
 SELECT 0 AS id,
    d.tenant_id,
    d.id AS delivery_id,
    d.subscriber,
    1 AS attempt,
    d.last_started_at AS started_at,
    d.last_duration_ms AS duration_ms,
    d.last_status AS status,
    'done'::text AS outcome,
    NULL::text AS error
   FROM queue.deliveries d
  WHERE d.last_started_at IS NOT NULL AND d.state = 'done'::text AND d.attempts = 1;
GRANT SELECT ON TABLE queue.attempt_log TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE queue.attempt_log TO queue;

CREATE TABLE queue.attempts (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  delivery_id bigint NOT NULL,
  attempt integer NOT NULL,
  started_at timestamp with time zone NOT NULL,
  duration_ms integer NOT NULL,
  status integer,
  outcome text NOT NULL,
  error text
);
ALTER TABLE queue.attempts ADD CONSTRAINT attempts_delivery_id_fkey FOREIGN KEY (delivery_id) REFERENCES queue.deliveries(id);
ALTER TABLE queue.attempts ADD CONSTRAINT attempts_outcome_check CHECK ((outcome = ANY (ARRAY['done'::text, 'retry'::text, 'dead'::text, 'held'::text])));
ALTER TABLE queue.attempts ADD CONSTRAINT attempts_pkey PRIMARY KEY (id);
CREATE INDEX attempts_by_delivery ON queue.attempts USING btree (delivery_id, id);
CREATE INDEX attempts_by_time ON queue.attempts USING brin (started_at);
ALTER TABLE queue.attempts ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON queue.attempts AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE queue.attempts TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE queue.attempts TO queue;
CREATE SEQUENCE queue.attempts_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of queue.attempts.id
GRANT SELECT, USAGE ON SEQUENCE queue.attempts_id_seq TO queue;

CREATE TABLE queue.audit_positions (
  subscriber text NOT NULL,
  done_xid xid8 NOT NULL,
  id bigint NOT NULL
);
ALTER TABLE queue.audit_positions ADD CONSTRAINT audit_positions_pkey PRIMARY KEY (subscriber);
GRANT SELECT ON TABLE queue.audit_positions TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE queue.audit_positions TO queue;

CREATE TABLE queue.closure_counts (
  tenant_id uuid NOT NULL,
  subscriber text NOT NULL,
  closed bigint NOT NULL DEFAULT 0,
  mismatch bigint NOT NULL DEFAULT 0
);
ALTER TABLE queue.closure_counts ADD CONSTRAINT closure_counts_pkey PRIMARY KEY (tenant_id, subscriber);
ALTER TABLE queue.closure_counts ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON queue.closure_counts AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE queue.closure_counts TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE queue.closure_counts TO queue;

CREATE TABLE queue.deliveries (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  subscriber text NOT NULL,
  type text NOT NULL,
  aggregate_id text NOT NULL,
  state text NOT NULL DEFAULT 'pending'::text,
  attempts integer NOT NULL DEFAULT 0,
  max_attempts integer,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  next_attempt_at timestamp with time zone NOT NULL DEFAULT now(),
  lease_owner text,
  lease_expires_at timestamp with time zone,
  last_status integer,
  last_error text,
  done_at timestamp with time zone,
  dead_at timestamp with time zone,
  redrives integer NOT NULL DEFAULT 0,
  refused_reason text,
  refused_by text,
  refused_at timestamp with time zone,
  republish_at timestamp with time zone,
  last_started_at timestamp with time zone,
  last_duration_ms integer,
  republishes integer NOT NULL DEFAULT 0,
  held_behind bigint,
  done_xid xid8
);
ALTER TABLE queue.deliveries ADD CONSTRAINT deliveries_check CHECK (((state = 'in_flight'::text) = (lease_owner IS NOT NULL)));
ALTER TABLE queue.deliveries ADD CONSTRAINT deliveries_check1 CHECK (((state <> 'dead'::text) OR (dead_at IS NOT NULL)));
ALTER TABLE queue.deliveries ADD CONSTRAINT deliveries_check2 CHECK (((state = 'refused'::text) = ((refused_at IS NOT NULL) AND (refused_reason IS NOT NULL))));
ALTER TABLE queue.deliveries ADD CONSTRAINT deliveries_done_xid_check CHECK (((state <> 'done'::text) OR (done_xid IS NOT NULL)));
ALTER TABLE queue.deliveries ADD CONSTRAINT deliveries_held_behind_check CHECK (((state = 'held'::text) = (held_behind IS NOT NULL)));
ALTER TABLE queue.deliveries ADD CONSTRAINT deliveries_message_id_subscriber_key UNIQUE (message_id, subscriber);
ALTER TABLE queue.deliveries ADD CONSTRAINT deliveries_pkey PRIMARY KEY (id);
ALTER TABLE queue.deliveries ADD CONSTRAINT deliveries_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'in_flight'::text, 'done'::text, 'dead'::text, 'refused'::text, 'held'::text])));
CREATE INDEX deliveries_dead ON queue.deliveries USING btree (tenant_id, dead_at, id) WHERE (state = 'dead'::text);
CREATE INDEX deliveries_done ON queue.deliveries USING btree (subscriber, done_xid, id) WHERE (state = 'done'::text);
CREATE INDEX deliveries_done_by_time ON queue.deliveries USING brin (last_started_at);
CREATE INDEX deliveries_error_words ON queue.deliveries USING gin (last_error platform.gin_trgm_ops) WHERE (last_error IS NOT NULL);
CREATE INDEX deliveries_held ON queue.deliveries USING btree (held_behind) WHERE (state = 'held'::text);
CREATE INDEX deliveries_open ON queue.deliveries USING btree (tenant_id, id) WHERE (state = ANY (ARRAY['pending'::text, 'in_flight'::text]));
CREATE INDEX deliveries_refused ON queue.deliveries USING btree (tenant_id, refused_at, id) WHERE (state = 'refused'::text);
CREATE INDEX deliveries_republish ON queue.deliveries USING btree (republish_at) WHERE (republish_at IS NOT NULL);
ALTER TABLE queue.deliveries ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON queue.deliveries AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE queue.deliveries TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE queue.deliveries TO queue;
GRANT SELECT, INSERT ON TABLE queue.deliveries TO relay;
CREATE SEQUENCE queue.deliveries_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of queue.deliveries.id
GRANT SELECT, USAGE ON SEQUENCE queue.deliveries_id_seq TO queue;

CREATE TABLE queue.messages (
  message_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  source text NOT NULL,
  type text NOT NULL,
  aggregate_id text NOT NULL,
  envelope jsonb NOT NULL,
  published_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE queue.messages ADD CONSTRAINT messages_pkey PRIMARY KEY (message_id);
CREATE INDEX messages_by_aggregate ON queue.messages USING btree (aggregate_id);
CREATE INDEX messages_by_tenant ON queue.messages USING btree (tenant_id, published_at);
CREATE INDEX messages_published_by_time ON queue.messages USING brin (published_at);
CREATE TRIGGER messages_immutable BEFORE UPDATE OF envelope, message_id ON queue.messages FOR EACH ROW EXECUTE FUNCTION platform.forbid_envelope_change();
ALTER TABLE queue.messages ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON queue.messages AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE queue.messages TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE queue.messages TO queue;
GRANT SELECT, INSERT ON TABLE queue.messages TO relay;

CREATE TABLE queue.mismatches (
  delivery_id bigint NOT NULL,
  tenant_id uuid NOT NULL,
  subscriber text NOT NULL,
  message_id uuid NOT NULL,
  found_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE queue.mismatches ADD CONSTRAINT mismatches_delivery_id_fkey FOREIGN KEY (delivery_id) REFERENCES queue.deliveries(id);
ALTER TABLE queue.mismatches ADD CONSTRAINT mismatches_pkey PRIMARY KEY (delivery_id);
ALTER TABLE queue.mismatches ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON queue.mismatches AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE queue.mismatches TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE queue.mismatches TO queue;

CREATE TABLE queue.pause_actions (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  subscriber text NOT NULL,
  action text NOT NULL,
  actor text NOT NULL,
  at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE queue.pause_actions ADD CONSTRAINT pause_actions_action_check CHECK ((action = ANY (ARRAY['pause'::text, 'resume'::text])));
ALTER TABLE queue.pause_actions ADD CONSTRAINT pause_actions_pkey PRIMARY KEY (id);
CREATE INDEX pause_actions_by_tenant ON queue.pause_actions USING btree (tenant_id, id);
ALTER TABLE queue.pause_actions ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON queue.pause_actions AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE queue.pause_actions TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE queue.pause_actions TO queue;
CREATE SEQUENCE queue.pause_actions_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of queue.pause_actions.id
GRANT SELECT, USAGE ON SEQUENCE queue.pause_actions_id_seq TO queue;

CREATE TABLE queue.pauses (
  tenant_id uuid NOT NULL,
  subscriber text NOT NULL,
  paused boolean NOT NULL,
  actor text NOT NULL,
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE queue.pauses ADD CONSTRAINT pauses_pkey PRIMARY KEY (tenant_id, subscriber);
ALTER TABLE queue.pauses ADD CONSTRAINT pauses_subscriber_check CHECK (((length(subscriber) >= 1) AND (length(subscriber) <= 80)));
ALTER TABLE queue.pauses ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON queue.pauses AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE queue.pauses TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE queue.pauses TO queue;

CREATE TABLE queue.supersessions (
  delivery_id bigint NOT NULL,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  actor text NOT NULL,
  reason text NOT NULL,
  at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE queue.supersessions ADD CONSTRAINT supersessions_delivery_id_fkey FOREIGN KEY (delivery_id) REFERENCES queue.deliveries(id);
ALTER TABLE queue.supersessions ADD CONSTRAINT supersessions_pkey PRIMARY KEY (delivery_id);
CREATE INDEX supersessions_by_message ON queue.supersessions USING btree (message_id);
ALTER TABLE queue.supersessions ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON queue.supersessions AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE queue.supersessions TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE queue.supersessions TO queue;

CREATE TABLE queue.workers (
  id text NOT NULL,
  host text NOT NULL,
  pid integer NOT NULL,
  roles text[] NOT NULL,
  transport text NOT NULL,
  version text NOT NULL,
  leases integer NOT NULL DEFAULT 0,
  leases_until timestamp with time zone,
  last_claim_at timestamp with time zone,
  started_at timestamp with time zone NOT NULL DEFAULT now(),
  last_beat_at timestamp with time zone NOT NULL DEFAULT now(),
  beat_ms integer NOT NULL
);
ALTER TABLE queue.workers ADD CONSTRAINT workers_beat_ms_check CHECK ((beat_ms > 0));
ALTER TABLE queue.workers ADD CONSTRAINT workers_host_check CHECK ((length(host) <= 255));
ALTER TABLE queue.workers ADD CONSTRAINT workers_id_check CHECK (((length(id) >= 1) AND (length(id) <= 200)));
ALTER TABLE queue.workers ADD CONSTRAINT workers_leases_check CHECK ((leases >= 0));
ALTER TABLE queue.workers ADD CONSTRAINT workers_pid_check CHECK ((pid > 0));
ALTER TABLE queue.workers ADD CONSTRAINT workers_pkey PRIMARY KEY (id);
ALTER TABLE queue.workers ADD CONSTRAINT workers_roles_check CHECK ((roles <@ ARRAY['relay'::text, 'consume'::text]));
ALTER TABLE queue.workers ADD CONSTRAINT workers_transport_check CHECK (((length(transport) >= 1) AND (length(transport) <= 40)));
ALTER TABLE queue.workers ADD CONSTRAINT workers_version_check CHECK (((length(version) >= 1) AND (length(version) <= 80)));
GRANT SELECT ON TABLE queue.workers TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE queue.workers TO queue;

CREATE TABLE receipts.inbox (
  message_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  type text NOT NULL,
  received_at timestamp with time zone NOT NULL DEFAULT now(),
  status integer NOT NULL,
  outcome jsonb NOT NULL DEFAULT '{}'::jsonb,
  aggregate_id text,
  aggregate_version integer,
  repeats integer NOT NULL DEFAULT 0
);
ALTER TABLE receipts.inbox ADD CONSTRAINT inbox_pkey PRIMARY KEY (message_id);
ALTER TABLE receipts.inbox ADD CONSTRAINT inbox_repeats_check CHECK ((repeats >= 0));
ALTER TABLE receipts.inbox ADD CONSTRAINT inbox_status_check CHECK ((status = ANY (ARRAY[200, 422])));
CREATE INDEX inbox_by_aggregate ON receipts.inbox USING btree (aggregate_id, aggregate_version) WHERE (aggregate_id IS NOT NULL);
CREATE INDEX inbox_received_by_time ON receipts.inbox USING brin (received_at);
ALTER TABLE receipts.inbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON receipts.inbox AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE receipts.inbox TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE receipts.inbox TO receipts;

CREATE TABLE receipts.order_violations (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  type text NOT NULL,
  aggregate_id text NOT NULL,
  arrived_version integer NOT NULL,
  applied_version integer NOT NULL,
  at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE receipts.order_violations ADD CONSTRAINT order_violations_check CHECK ((applied_version > arrived_version));
ALTER TABLE receipts.order_violations ADD CONSTRAINT order_violations_message_id_key UNIQUE (message_id);
ALTER TABLE receipts.order_violations ADD CONSTRAINT order_violations_pkey PRIMARY KEY (id);
CREATE INDEX order_violations_by_tenant ON receipts.order_violations USING btree (tenant_id, at);
ALTER TABLE receipts.order_violations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON receipts.order_violations AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE receipts.order_violations TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE receipts.order_violations TO receipts;
CREATE SEQUENCE receipts.order_violations_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of receipts.order_violations.id
GRANT SELECT, USAGE ON SEQUENCE receipts.order_violations_id_seq TO receipts;

CREATE TABLE receipts.receipts (
  order_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  number text NOT NULL,
  lines jsonb NOT NULL,
  total_cents integer NOT NULL,
  payment_ref text NOT NULL,
  message_id uuid NOT NULL,
  issued_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE receipts.receipts ADD CONSTRAINT receipts_pkey PRIMARY KEY (order_id);
CREATE INDEX receipts_by_number ON receipts.receipts USING btree (number);
ALTER TABLE receipts.receipts ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON receipts.receipts AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE receipts.receipts TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE receipts.receipts TO receipts;

CREATE TABLE receipts.refusals (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  type text NOT NULL,
  reason text NOT NULL,
  refused_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE receipts.refusals ADD CONSTRAINT refusals_message_id_key UNIQUE (message_id);
ALTER TABLE receipts.refusals ADD CONSTRAINT refusals_pkey PRIMARY KEY (id);
ALTER TABLE receipts.refusals ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON receipts.refusals AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE receipts.refusals TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE receipts.refusals TO receipts;
CREATE SEQUENCE receipts.refusals_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of receipts.refusals.id
GRANT SELECT, USAGE ON SEQUENCE receipts.refusals_id_seq TO receipts;

CREATE TABLE schedule.bookings (
  order_id uuid NOT NULL,
  sku text NOT NULL,
  tenant_id uuid NOT NULL,
  day date NOT NULL,
  qty integer NOT NULL,
  state text NOT NULL,
  version integer NOT NULL
);
ALTER TABLE schedule.bookings ADD CONSTRAINT bookings_pkey PRIMARY KEY (order_id, sku);
ALTER TABLE schedule.bookings ADD CONSTRAINT bookings_state_check CHECK ((state = ANY (ARRAY['held'::text, 'reserved'::text, 'released'::text])));
CREATE INDEX bookings_by_day ON schedule.bookings USING btree (tenant_id, day, sku);
ALTER TABLE schedule.bookings ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON schedule.bookings AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE schedule.bookings TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE schedule.bookings TO schedule;

CREATE TABLE schedule.inbox (
  message_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  type text NOT NULL,
  received_at timestamp with time zone NOT NULL DEFAULT now(),
  status integer NOT NULL,
  outcome jsonb NOT NULL DEFAULT '{}'::jsonb,
  aggregate_id text,
  aggregate_version integer,
  repeats integer NOT NULL DEFAULT 0
);
ALTER TABLE schedule.inbox ADD CONSTRAINT inbox_pkey PRIMARY KEY (message_id);
ALTER TABLE schedule.inbox ADD CONSTRAINT inbox_repeats_check CHECK ((repeats >= 0));
ALTER TABLE schedule.inbox ADD CONSTRAINT inbox_status_check CHECK ((status = ANY (ARRAY[200, 422])));
CREATE INDEX inbox_by_aggregate ON schedule.inbox USING btree (aggregate_id, aggregate_version) WHERE (aggregate_id IS NOT NULL);
CREATE INDEX inbox_received_by_time ON schedule.inbox USING brin (received_at);
ALTER TABLE schedule.inbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON schedule.inbox AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE schedule.inbox TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE schedule.inbox TO schedule;

CREATE TABLE schedule.order_violations (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  type text NOT NULL,
  aggregate_id text NOT NULL,
  arrived_version integer NOT NULL,
  applied_version integer NOT NULL,
  at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE schedule.order_violations ADD CONSTRAINT order_violations_check CHECK ((applied_version > arrived_version));
ALTER TABLE schedule.order_violations ADD CONSTRAINT order_violations_message_id_key UNIQUE (message_id);
ALTER TABLE schedule.order_violations ADD CONSTRAINT order_violations_pkey PRIMARY KEY (id);
CREATE INDEX order_violations_by_tenant ON schedule.order_violations USING btree (tenant_id, at);
ALTER TABLE schedule.order_violations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON schedule.order_violations AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE schedule.order_violations TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE schedule.order_violations TO schedule;
CREATE SEQUENCE schedule.order_violations_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of schedule.order_violations.id
GRANT SELECT, USAGE ON SEQUENCE schedule.order_violations_id_seq TO schedule;

CREATE TABLE schedule.refusals (
  id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  message_id uuid NOT NULL,
  type text NOT NULL,
  reason text NOT NULL,
  refused_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE schedule.refusals ADD CONSTRAINT refusals_message_id_key UNIQUE (message_id);
ALTER TABLE schedule.refusals ADD CONSTRAINT refusals_pkey PRIMARY KEY (id);
ALTER TABLE schedule.refusals ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON schedule.refusals AS PERMISSIVE FOR ALL TO PUBLIC
  USING (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)))
  WITH CHECK (((tenant_id = ( SELECT platform.current_tenant() AS current_tenant)) OR ( SELECT platform.all_tenants() AS all_tenants)));
GRANT SELECT ON TABLE schedule.refusals TO console;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE schedule.refusals TO schedule;
CREATE SEQUENCE schedule.refusals_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1; -- the identity of schedule.refusals.id
GRANT SELECT, USAGE ON SEQUENCE schedule.refusals_id_seq TO schedule;

-- Comments
COMMENT ON EXTENSION pg_trgm IS 'text similarity measurement and index searching based on trigrams';
