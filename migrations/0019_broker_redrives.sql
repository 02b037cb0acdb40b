-- A redrive over the JetStream transport: the delivery is pending again in
-- PostgreSQL, and the broker must be given its message again, addressed to
-- that delivery's subscriber only. republish_at says so: set by the redrive
-- in the same transaction, taken by the transport's republisher (set ahead
-- while it publishes, a lease), and cleared once JetStream has acknowledged
-- the publish. Over the PostgreSQL queue it stays null: the consumers claim
-- pending rows themselves.
alter table queue.deliveries add column republish_at timestamptz;
create index deliveries_republish on queue.deliveries (republish_at)
  where republish_at is not null;
