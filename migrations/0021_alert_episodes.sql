-- Alerts with a life: an alert that stops firing does not vanish, it
-- recovers and is resolved, and an operator can acknowledge it. One row
-- per episode of an alert (kind and subject), in the queue's database
-- beside the operator log, so an acknowledgement and its line in the log
-- commit together. services/console/alert_episodes.ts moves the states:
--   firing     : the condition holds and nothing says it is getting better.
--                Moved by the next reading to recovering or resolved.
--   recovering : the condition still holds by its window, or no longer
--                holds but its repair is under way (redriven dead letters
--                not yet applied; the last attempts succeeded). Moved by a
--                reading to firing (worse again) or resolved.
--   resolved   : the condition is gone and nothing is left in flight.
--                Final; a new firing opens a new episode.
create table queue.alert_episodes (
  id bigint generated always as identity primary key,
  tenant_id uuid not null,
  -- services/console/alerts.ts lists the kinds; not a CHECK, so that a new
  -- kind of alert needs no migration of this table.
  kind text not null check (length(kind) between 1 and 40),
  subject text not null check (length(subject) between 1 and 80),
  state text not null check (state in ('firing', 'recovering', 'resolved')),
  value double precision not null,
  threshold double precision not null,
  since timestamptz not null,
  changed_at timestamptz not null default now(),
  resolved_at timestamptz,
  acknowledged_by text,
  acknowledged_at timestamptz,
  check ((state = 'resolved') = (resolved_at is not null)),
  check ((acknowledged_by is null) = (acknowledged_at is null))
);
-- At most one open episode per alert: two readings at once insert one.
create unique index alert_episodes_open on queue.alert_episodes
  (tenant_id, kind, subject) where resolved_at is null;
create index alert_episodes_by_tenant on queue.alert_episodes
  (tenant_id, changed_at);

select platform.enable_tenant_rls('queue.alert_episodes'::regclass);

-- The operator log knows two more actions: an alert acknowledged, and a
-- fault switch flipped.
alter table queue.operator_actions
  drop constraint operator_actions_action_check,
  add constraint operator_actions_action_check
    check (action in ('redrive', 'refuse', 'supersede', 'cancel', 'release',
                      'acknowledge', 'fault'));
