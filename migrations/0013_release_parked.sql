-- An operator's way out of the relay's loop guard. The guard parks outbox
-- rows (next attempt at infinity) once a sandbox has used up its automatic
-- re-arms for the day; until now only the sender's next command released
-- them, and a customer who never acts again kept a paid order "placed" for
-- ever. The console's Release (lib/relay/release.ts) runs as the relay, the
-- one role that may mark the rows of every outbox, inside the operator's
-- sandbox, and logs the action in the same transaction: so the relay may
-- also write that line of the operator log, and the log knows the action.
alter table queue.operator_actions
  drop constraint operator_actions_action_check,
  add constraint operator_actions_action_check
    check (action in ('redrive', 'refuse', 'supersede', 'cancel', 'release'));

grant insert on queue.operator_actions to relay;
