-- Sequences that hold: a subscriber that keeps each aggregate's order has
-- a failed delivery wait, state 'held', behind an earlier delivery of the
-- same aggregate to it that is dead or held, or still open when this one
-- runs out of retries, instead of being tried and dying in turn.
-- held_behind names that earlier delivery; when it is done or refused,
-- the ones held behind it are pending again (lib/ledger/deliveries_sql.ts).
alter table {{queue}}.deliveries
  drop constraint deliveries_state_check,
  add constraint deliveries_state_check
    check (state in ('pending', 'in_flight', 'done', 'dead', 'refused',
                     'held')),
  add column held_behind bigint,
  add constraint deliveries_held_behind_check
    check ((state = 'held') = (held_behind is not null));

alter table {{queue}}.attempts
  drop constraint attempts_outcome_check,
  add constraint attempts_outcome_check
    check (outcome in ('done', 'retry', 'dead', 'held'));

-- Found at each done or refused delivery: nearly always empty.
create index deliveries_held on {{queue}}.deliveries (held_behind)
  where state = 'held';
