-- 0001_init: every table of the embedded store.
-- Applied once, inside a transaction, then PRAGMA user_version = 1 (see src/migrations.ts).

-- Accepted messages not yet final (ports/journal.ts). `seq` gives acceptance order and never
-- goes backwards (AUTOINCREMENT does not reuse numbers of deleted rows); `id` is the gateway
-- message id. `payload` is the QueuedMessage as JSON; `attempt` overrides its attempt field so
-- that markStarted does not rewrite the payload.
CREATE TABLE journal (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  attempt INTEGER NOT NULL,
  payload TEXT NOT NULL
);

-- Audited outcomes (ports/audit-log.ts). Pages run newest first by (at, id); every filter of
-- GET /admin/audit has an index that ends in (at, id) so a filtered page is an index range scan.
CREATE TABLE audit (
  id TEXT PRIMARY KEY,
  at INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  reason TEXT,
  rule TEXT,
  channel TEXT NOT NULL,
  platform TEXT NOT NULL,
  session TEXT NOT NULL,
  chat_type TEXT NOT NULL,
  chat_id TEXT NOT NULL,
  sender_id TEXT NOT NULL,
  sender_name TEXT,
  pipeline TEXT,
  message_id TEXT NOT NULL,
  platform_message_id TEXT NOT NULL,
  text TEXT,
  error TEXT,
  -- Dead letters only: the QueuedMessage as JSON, for replay.
  payload TEXT,
  replayed_at INTEGER
);
CREATE INDEX audit_at ON audit (at, id);
CREATE INDEX audit_outcome ON audit (outcome, at, id);
CREATE INDEX audit_reason ON audit (reason, at, id);
CREATE INDEX audit_rule ON audit (rule, at, id);
CREATE INDEX audit_channel ON audit (channel, at, id);
CREATE INDEX audit_session ON audit (session, at, id);

-- Platform delivery ids seen (ports/dedup-store.ts); rows past expires_at count as absent and
-- are deleted by a periodic sweep.
CREATE TABLE dedup (
  key TEXT PRIMARY KEY,
  expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX dedup_expires_at ON dedup (expires_at);

-- Status and replies of HTTP-channel messages (ports/message-status-store.ts); `body` is the
-- MessageStatus as JSON.
CREATE TABLE message_status (
  id TEXT PRIMARY KEY,
  updated_at INTEGER NOT NULL,
  body TEXT NOT NULL
);
CREATE INDEX message_status_updated_at ON message_status (updated_at);

-- Idempotency-Key → message id bindings of the HTTP channel.
CREATE TABLE idempotency_key (
  key TEXT PRIMARY KEY,
  message_id TEXT NOT NULL,
  expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX idempotency_key_expires_at ON idempotency_key (expires_at);

-- Conversation history per session and pipeline (ports/history-store.ts), in append order.
CREATE TABLE history (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  session TEXT NOT NULL,
  pipeline TEXT NOT NULL,
  role TEXT NOT NULL,
  content TEXT NOT NULL
);
CREATE INDEX history_conversation ON history (session, pipeline, seq);
