-- The outbox: a sender's work list of what it still owes. Every sender's
-- outbox has the same shape, so it is made by a function that takes the
-- sender's schema: platform.create_outbox_with_indexes(schema).

-- The outbox table and its loop guard. A row is owed until the relay
-- stores its copy and deletes it, in one transaction.
create function {{platform}}.create_outbox(s text) returns void
  language plpgsql
  as $$
begin
  execute format($ddl$
    create table %1$I.outbox (
      id bigint generated always as identity,
      sandbox_id uuid not null,
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

    -- The loop guard: automatic re-arms after a failed publish, per sandbox
    -- and UTC day.
    create table %1$I.relay_guard (
      sandbox_id uuid not null,
      day date not null,
      rearms int not null default 0,
      primary key (sandbox_id, day)
    );
  $ddl$, s);
  perform {{platform}}.enable_sandbox_rls(format('%I.outbox', s)::regclass);
  perform {{platform}}.enable_sandbox_rls(format('%I.relay_guard', s)::regclass);
end $$;

-- Replaces a table's envelope trigger by one that fires only for an update
-- that names the envelope or the message id: none of the relay's do.
create function {{platform}}.guard_envelope(t regclass, trigger_name text)
  returns void
  language plpgsql
  as $$
begin
  execute format('drop trigger if exists %I on %s', trigger_name, t);
  execute format(
    'create trigger %I before update of envelope, message_id on %s
       for each row execute function {{platform}}.forbid_envelope_change()',
    trigger_name, t);
end $$;

-- The rows that wait for a retry after a failed publish: usually none, so
-- a new row writes no entry here.
create function {{platform}}.add_outbox_indexes(s text) returns void
  language plpgsql
  as $$
begin
  execute format(
    'create index outbox_retry on %I.outbox (sandbox_id, next_attempt_at)
       where state = ''pending'' and attempts > 0', s);
end $$;

-- The relay's rights on an outbox: read, mark and delete its rows.
create function {{platform}}.open_outbox_to_relay(s text) returns void
  language plpgsql
  as $$
begin
  execute format('grant usage on schema %I to relay', s);
  execute format('grant select, update, delete on %I.outbox to relay', s);
  perform {{platform}}.guard_envelope(format('%I.outbox', s)::regclass,
    'outbox_immutable');
end $$;

-- A new outbox, whole.
create function {{platform}}.create_outbox_with_indexes(s text) returns void
  language plpgsql
  as $$
begin
  perform {{platform}}.create_outbox(s);
  perform {{platform}}.add_outbox_indexes(s);
  perform {{platform}}.open_outbox_to_relay(s);
end $$;
