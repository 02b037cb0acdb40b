-- The relay reads the tenants being wiped inline (lib/db/closed.ts
-- notWiping), as the queue and the console may already.
grant select on {{platform}}.tenants to relay;
