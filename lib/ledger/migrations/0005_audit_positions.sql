-- The closure audit keeps a position per subscriber instead of marking each
-- delivery it counted: marking wrote every done delivery once more (a row
-- version and an entry in each of its indexes). A finish records its
-- transaction id in done_xid; the audit counts done deliveries in
-- (done_xid, id) order, only below the oldest transaction still running,
-- so that no delivery can later turn done behind its position
-- (lib/ledger/audit.ts). A delivery is counted when its subscriber's
-- position is at or past it.
create table {{queue}}.audit_positions (
  subscriber text primary key,
  done_xid xid8 not null,
  id bigint not null
);

alter table {{queue}}.deliveries add column done_xid xid8;

-- What was audited already sorts first (xid 0), and each subscriber's
-- position starts past it; what was not is counted once this commits.
update {{queue}}.deliveries
   set done_xid = case when audited then '0'::xid8 else pg_current_xact_id() end
 where state = 'done';
insert into {{queue}}.audit_positions (subscriber, done_xid, id)
select subscriber, '0'::xid8, max(id) from {{queue}}.deliveries
 where state = 'done' and audited
 group by subscriber;

drop index {{queue}}.deliveries_unaudited;
alter table {{queue}}.deliveries
  drop column audited,
  add constraint deliveries_done_xid_check
    check (state <> 'done' or done_xid is not null);

-- The audit's next batch, and what is not counted yet, by index range.
create index deliveries_done on {{queue}}.deliveries (subscriber, done_xid, id)
  where state = 'done';
