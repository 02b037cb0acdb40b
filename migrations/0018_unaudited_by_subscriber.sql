-- The audit reads each receiver's done deliveries not yet audited, a
-- receiver at a time (lib/queue/audit.ts). Keyed by id alone, the index
-- made every receiver's part scan all of them and drop the other
-- receivers' rows: seven scans of the whole list at each audit. Keyed by
-- subscriber first, each part reads its own rows only. The entries are
-- as many as before.
drop index queue.deliveries_unaudited;
create index deliveries_unaudited on queue.deliveries (subscriber, id)
  where state = 'done' and not audited;
