-- 0010_status_version_key_scope: statuses are ordered by a version derived from the message's
-- life (core statusVersion) and by whether they are final, not by the writers' clocks, so both
-- get a column the put compares. Rows written before name no channel, which no channel answers
-- for; their version 0 lets any new status of the message replace them.
ALTER TABLE message_status ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE message_status ADD COLUMN final INTEGER NOT NULL DEFAULT 0;

-- An Idempotency-Key is the caller's own: bound per channel and credential (a stable id of the
-- API key, or `loopback`), with the fingerprint of the request it came with. Earlier bindings
-- named neither and cannot be scoped: they go.
DROP TABLE idempotency_key;
CREATE TABLE idempotency_key (
  channel TEXT NOT NULL,
  credential TEXT NOT NULL,
  key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  message_id TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (channel, credential, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_key_expires_at ON idempotency_key (expires_at);
