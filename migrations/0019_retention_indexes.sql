-- Retention (lib/queue/retention.ts) removes what is older than the replay
-- horizon and a margin, a batch at a time. Block range indexes let each
-- batch find the old rows without reading the whole table: rows are
-- written in about the order of these times, and a block range index
-- costs next to nothing to keep and does not stop an update from being
-- HOT.
create index messages_published_by_time on queue.messages
  using brin (published_at);

do $$
declare
  s name;
begin
  for s in
    select n.nspname from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where c.relname = 'inbox' and c.relkind = 'r'
  loop
    execute format(
      'create index inbox_received_by_time on %I.inbox using brin (received_at)',
      s);
  end loop;
end $$;
