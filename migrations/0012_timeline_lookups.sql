-- The order page read every outbox row of both senders to find one order's
-- messages (a scan that grows with history). Orders' own messages are found
-- through orders.events, which names each event's message; billing's, which
-- are few (one or two per payment), through an index on the order they are
-- about.
create index outbox_by_aggregate on billing.outbox ((envelope->>'aggregateId'));
