-- deliveries_by_sandbox (0006) served one console list: a sandbox's
-- deliveries, newest first. Every delivery paid an entry in it, and every
-- state change paid another (a claim, a finish and the audit each write a
-- new row version, none of them HOT, since the state is in the partial
-- indexes' predicates): three to six deliveries per message, four row
-- versions each.
--
-- One entry per message does the same work: the list walks this sandbox's
-- messages newest first and takes their deliveries through the unique index
-- on (message_id, subscriber). Lists of open, dead or refused deliveries
-- keep their partial indexes; the counts per state read those, the closure
-- counters and the few done deliveries not audited yet.
create index messages_by_sandbox on queue.messages (sandbox_id, published_at);
drop index queue.deliveries_by_sandbox;
