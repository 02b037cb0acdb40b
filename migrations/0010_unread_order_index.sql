-- orders.orders_by_sandbox (sandbox_id, created_at desc) cost an index entry
-- for every order placed, and no query reads it: orders are read by id (the
-- order page, payments, cancels, the timeline), and the daily wipe deletes a
-- sandbox's orders together with most of the table.

drop index orders.orders_by_sandbox;
