-- 0009_outbox_ended_by_id: `outbox_ended` is looked up and written by id only: keyed by it
-- (WITHOUT ROWID), one b-tree instead of a rowid table plus its primary key index. A file that
-- an earlier build's 0007 rebuilt so already is rebuilt again, the same way: nothing changes.
CREATE TABLE outbox_ended_by_id (
  id TEXT PRIMARY KEY,
  expires_at INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO outbox_ended_by_id (id, expires_at) SELECT id, expires_at FROM outbox_ended;
DROP TABLE outbox_ended;
ALTER TABLE outbox_ended_by_id RENAME TO outbox_ended;
CREATE INDEX outbox_ended_expiry ON outbox_ended (expires_at);
