-- 0005_outbox_ended: ids of ended deliveries that asked to be remembered (`Delivery.rememberForMs`:
-- a turn's answer, a dead letter's replay), so adding one again while remembered answers
-- `duplicate`. Expired rows are deleted in batches of 1 000, through `outbox_ended_expiry`.
CREATE TABLE outbox_ended (
  id TEXT PRIMARY KEY,
  expires_at INTEGER NOT NULL
);
CREATE INDEX outbox_ended_expiry ON outbox_ended (expires_at);
