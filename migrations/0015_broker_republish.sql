-- Over JetStream, a delivery still open in the ledger that the broker no
-- longer holds (a stream deleted or made again, storage lost, a consumer
-- gone) is published again from the ledger, by the redrives' republisher.
-- This counts how often that happened to each delivery; the broker id of
-- such a copy carries the count, so that the duplicate window never
-- swallows it.
alter table queue.deliveries
  add column republishes integer not null default 0;
