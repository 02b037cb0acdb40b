-- The W3C trace context of the pay request that wrote a test-checkout event
-- (where tracing is on, lib/trace): the webhook post joins that trace, and
-- so does the payment's message.
alter table billing.checkout_events add column traceparent text;
