-- A delivery's id is unique across split mode's queues: the queue of slot
-- {{queue_slot}} takes every eighth id, starting at its slot. The console
-- then finds a delivery's queue from its id alone (services/databases.ts).

alter table queue.deliveries alter column id
  set increment by 8 set start with {{queue_slot}} restart with {{queue_slot}};
