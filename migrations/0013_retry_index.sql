-- outbox_retry served the flush of a command (this sandbox's rows that wait
-- for a retry or were parked) but held every pending row, so each new
-- outbox row wrote an entry into it. Only a failed publish makes a pending
-- row wait (attempts > 0, next attempt later), so the index needs only
-- those: usually none, and a new row writes nothing into it.

create or replace function platform.add_outbox_indexes(s text) returns void
  language plpgsql
  as $$
begin
  execute format(
    'create index outbox_retry on %I.outbox (sandbox_id, next_attempt_at)
       where state = ''pending'' and attempts > 0', s);
end $$;

drop index orders.outbox_retry;
drop index billing.outbox_retry;
select platform.add_outbox_indexes('orders');
select platform.add_outbox_indexes('billing');
