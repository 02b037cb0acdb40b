-- The relay as a role of its own. With the queue in the same database as
-- the outboxes, moving a batch is one transaction: mark the rows published
-- and store their messages and deliveries together, so there is no window
-- in which the queue has a message its outbox row does not know about (no
-- lease, no second update of each row, no envelope sent to the program and
-- back). The relay may read and mark outbox rows and add to the queue;
-- nothing else. Sandbox policies still apply; relays work for every sandbox.

do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'relay') then
    begin
      create role relay nologin;
    exception when duplicate_object or unique_violation then
      null; -- another database of the same cluster created it meanwhile
    end;
  end if;
  if not pg_has_role(current_user, 'relay', 'MEMBER') then
    grant relay to current_user;
  end if;
end $$;

grant usage on schema platform, queue to relay;
grant select on platform.faults to relay;
grant select, insert on queue.messages, queue.deliveries to relay;

-- The stored envelope is immutable, but the check ran for every update of
-- every row (claim, mark, retry) although none of them sets the envelope.
-- Fired only when an update names the envelope or the message id, it still
-- refuses every change to them.
create function platform.guard_envelope(t regclass, trigger_name text)
  returns void
  language plpgsql
  as $$
begin
  execute format('drop trigger if exists %I on %s', trigger_name, t);
  execute format(
    'create trigger %I before update of envelope, message_id on %s
       for each row execute function platform.forbid_envelope_change()',
    trigger_name, t);
end $$;

select platform.guard_envelope('queue.messages', 'messages_immutable');

-- What an outbox needs beyond its table: the relay's rights and the
-- narrower trigger.
create function platform.open_outbox_to_relay(s text) returns void
  language plpgsql
  as $$
begin
  execute format('grant usage on schema %I to relay', s);
  execute format('grant select, update on %I.outbox to relay', s);
  perform platform.guard_envelope(format('%I.outbox', s)::regclass,
    'outbox_immutable');
end $$;

select platform.open_outbox_to_relay('orders');
select platform.open_outbox_to_relay('billing');

-- New outboxes (tests make their own) get the same.
create or replace function platform.create_outbox_with_indexes(s text) returns void
  language plpgsql
  as $$
begin
  perform platform.create_outbox(s);
  perform platform.add_outbox_indexes(s);
  perform platform.open_outbox_to_relay(s);
end $$;

-- Each delivery costs its index entries at publish, three to six per
-- message. Two of them paid for little:
--
-- deliveries_by_aggregate served "the deliveries of one order" (the order
-- timeline, a console filter). One entry per message instead of one per
-- delivery does the same: find the order's messages, then their deliveries
-- by message id (the unique index on message_id, subscriber).
create index messages_by_aggregate on queue.messages (aggregate_id);
drop index queue.deliveries_by_aggregate;

-- The foreign key from a delivery to its message was checked for every
-- delivery inserted (a fifth of a relay batch's time, measured). Deliveries
-- are inserted only by the statement that inserts their message, from that
-- statement's own rows (lib/queue/publish.ts), and messages are deleted only
-- by the sandbox wipe, after their deliveries. The tests check that no
-- delivery is without its message.
alter table queue.deliveries drop constraint deliveries_message_id_fkey;
