-- 0007_outbox_writes_trimmed: fewer index pages written per delivery.
-- The store keeps its unclaimed heads in memory and reads them from `outbox` itself on open (its
-- `outbox_chat` index gives each chat's lowest `seq`), so `outbox_head` and the triggers that
-- kept it in step cost every add and removal two index writes for nothing.
DROP TRIGGER outbox_head_add;
DROP TRIGGER outbox_head_remove;
DROP TRIGGER outbox_head_reschedule;
DROP TABLE outbox_head;

-- `outbox_ended` is looked up and written by id only: keyed by it (WITHOUT ROWID), one b-tree
-- instead of a rowid table plus its primary key index.
CREATE TABLE outbox_ended_by_id (
  id TEXT PRIMARY KEY,
  expires_at INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO outbox_ended_by_id (id, expires_at) SELECT id, expires_at FROM outbox_ended;
DROP TABLE outbox_ended;
ALTER TABLE outbox_ended_by_id RENAME TO outbox_ended;
CREATE INDEX outbox_ended_expiry ON outbox_ended (expires_at);
