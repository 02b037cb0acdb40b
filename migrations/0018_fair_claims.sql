-- The consumers claim round-robin across sandboxes (lib/queue/deliveries_sql.ts):
-- they walk the sandboxes that have open deliveries, and take each one's
-- oldest due deliveries. Oldest first across all sandboxes let one sandbox's
-- backlog hold up every other's (a quiet sandbox's paid order waited 50 s
-- behind another's slow kitchen). The open deliveries' index leads with the
-- sandbox, so that both the walk and each sandbox's oldest rows are index
-- lookups; it replaces deliveries_open (0002), so a delivery still writes
-- one entry into it.
drop index queue.deliveries_open;
create index deliveries_open on queue.deliveries (sandbox_id, id)
  where state in ('pending', 'in_flight');
