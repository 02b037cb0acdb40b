-- What the console watches beyond the queue's states: the attempts of the
-- last hour. (The order in which an inbox sees an aggregate's versions is
-- watched by the inbox itself: platform.create_inbox, 0002_outbox_inbox.sql.)

-- The receivers page reads the attempts of the last hour. Attempts are
-- written in time order, so a block range index finds that hour for a few
-- pages of index and almost no cost per insert (a btree would add an entry
-- to every attempt the consumers write).
create index attempts_by_time on queue.attempts using brin (started_at);
