-- 0003_reply_outbox: replies waiting to be sent (ports/reply-outbox.ts). `seq` is the add order
-- (per chat the send order); `attempts`, `not_before` and `last_error` change on each failed
-- send and override the payload's fields, so a retry updates numbers rather than the JSON.
CREATE TABLE outbox (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  channel TEXT NOT NULL,
  chat TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  not_before INTEGER NOT NULL,
  last_error TEXT,
  payload TEXT NOT NULL
);
CREATE INDEX outbox_chat ON outbox (channel, chat, seq);
