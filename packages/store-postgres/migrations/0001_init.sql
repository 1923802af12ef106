-- 0001_init: the audit log, message statuses, idempotency keys and history.
-- Applied once, with search_path set to the store's schema, inside the migration transaction
-- that also records it in schema_migrations (see src/migrations.ts). Times are ms since the epoch.

-- Audited outcomes (ports/audit-log.ts). Pages run newest first by (at, id); every filter of
-- GET /admin/audit has an index that ends in (at, id) so a filtered page is an index range scan.
-- `id` uses the "C" collation so ids (ULIDs) order by their bytes, as in the other stores,
-- whatever the database's default collation.
CREATE TABLE audit (
  id TEXT COLLATE "C" PRIMARY KEY,
  at BIGINT NOT NULL,
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
  -- Dead letters only: the DeadLetterPayload, for replay. JSON rather than JSONB: kept as
  -- written (JSONB refuses the escape \u0000), and nothing queries inside it.
  payload JSON,
  replayed_at BIGINT
);
CREATE INDEX audit_at ON audit (at, id);
CREATE INDEX audit_outcome ON audit (outcome, at, id);
CREATE INDEX audit_reason ON audit (reason, at, id);
CREATE INDEX audit_rule ON audit (rule, at, id);
CREATE INDEX audit_channel ON audit (channel, at, id);
CREATE INDEX audit_session ON audit (session, at, id);
-- Unreplayed dead letters, the admin API's list.
CREATE INDEX audit_dead_letters ON audit (at, id) WHERE outcome = 'dead_lettered' AND replayed_at IS NULL;

-- Status and replies of HTTP-channel messages (ports/message-status-store.ts); `body` is the
-- MessageStatus (JSON, as the audit payload).
CREATE TABLE message_status (
  id TEXT PRIMARY KEY,
  updated_at BIGINT NOT NULL,
  body JSON NOT NULL
);
CREATE INDEX message_status_updated_at ON message_status (updated_at);

-- Idempotency-Key → message id bindings of the HTTP channel; a binding past expires_at counts
-- as absent and is overwritten by the next claim or deleted by prune.
CREATE TABLE idempotency_key (
  key TEXT PRIMARY KEY,
  message_id TEXT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX idempotency_key_expires_at ON idempotency_key (expires_at);

-- Conversation history per session and pipeline (ports/history-store.ts), in append order.
CREATE TABLE history (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  session TEXT NOT NULL,
  pipeline TEXT NOT NULL,
  role TEXT NOT NULL,
  content TEXT NOT NULL
);
CREATE INDEX history_conversation ON history (session, pipeline, seq);
