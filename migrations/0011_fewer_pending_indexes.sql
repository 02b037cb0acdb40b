-- Two indexes of 0006 cost an entry for every outbox row and every delivery
-- written, to answer a question asked only when nothing is due: "when is
-- the next row due?". By then the unpublished outbox rows, and the open
-- deliveries, are only those waiting for a retry or held by a lease: a few,
-- read through the partial indexes that the relay and the consumers claim
-- from (outbox_unpublished, deliveries_open). A tenth of a relay batch's
-- time, measured.

drop index queue.deliveries_next_due;

create or replace function platform.add_outbox_indexes(s text) returns void
  language plpgsql
  as $$
begin
  execute format(
    'create index outbox_retry on %I.outbox (sandbox_id, next_attempt_at)
       where state = ''pending''', s);
end $$;

drop index orders.outbox_next_due;
drop index billing.outbox_next_due;
