-- 0007_outbox_head_dropped: the store keeps its unclaimed heads in memory and reads them from
-- `outbox` itself on open (its `outbox_chat` index gives each chat's lowest `seq`), so the table
-- and the triggers that kept it in step cost every add and removal two index writes for nothing.
DROP TRIGGER outbox_head_add;
DROP TRIGGER outbox_head_remove;
DROP TRIGGER outbox_head_reschedule;
DROP TABLE outbox_head;
