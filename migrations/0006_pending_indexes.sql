-- Indexes that keep the hot paths off the history: each serves pending rows
-- only, so its size follows the backlog, not the years of published rows.
--
-- outbox_retry: the flush in lib/outbox/append.ts (this sandbox's rows that
--   wait for a retry) was a scan of every unpublished row per command.
-- outbox_next_due: the relay's "when is the next row due" (min over a
--   partial index instead of a scan).
-- deliveries_next_due: the same for the consumers.
-- deliveries_by_sandbox: console lists of one sandbox, newest first.

create function platform.add_outbox_indexes(s text) returns void
  language plpgsql
  as $$
begin
  execute format(
    'create index outbox_retry on %I.outbox (sandbox_id, next_attempt_at)
       where state = ''pending''', s);
  execute format(
    'create index outbox_next_due on %I.outbox (next_attempt_at)
       where state <> ''published''', s);
end $$;

select platform.add_outbox_indexes('orders');
select platform.add_outbox_indexes('billing');

-- New outboxes (tests make their own) get them too.
create or replace function platform.create_outbox_with_indexes(s text) returns void
  language plpgsql
  as $$
begin
  perform platform.create_outbox(s);
  perform platform.add_outbox_indexes(s);
end $$;

create index deliveries_next_due on queue.deliveries (next_attempt_at)
  where state in ('pending', 'in_flight');
create index deliveries_by_sandbox on queue.deliveries (sandbox_id, id);
