-- 0005_outbox_ended: ids of ended deliveries that asked to be remembered (`Delivery.rememberForMs`,
-- a dead letter's replay), so adding one again while remembered answers `duplicate`. Few rows:
-- expired ones are deleted whenever one is written.
CREATE TABLE outbox_ended (
  id TEXT PRIMARY KEY,
  expires_at INTEGER NOT NULL
);
