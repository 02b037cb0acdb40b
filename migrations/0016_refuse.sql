-- A statement that must be all or nothing, and decides so itself, calls
-- platform.refuse(code, message): it raises `message` with the SQLSTATE
-- `code`, which aborts the statement and with it the transaction. The order
-- statement (services/orders/orders_sql.ts) refuses an order that does not
-- fit the day's capacity this way, so that its COMMIT can go out right
-- behind it instead of after its answer: the COMMIT then answers ROLLBACK,
-- and nothing of the order stays. Declared to return a value, so that it
-- can stand in an expression; it never returns.
create function platform.refuse(code text, message text) returns boolean
  language plpgsql
  as $$
begin
  raise exception using errcode = code, message = message;
end $$;
