-- 0013_handoff_tenant: each handoff names the tenant of its session's messages (docs/design.md
-- §10), so that a channel moved to another tenant leaves its open handoffs with the one they
-- began under. NULL on a handoff begun before: the admin API then goes by its session's channel.
ALTER TABLE handoff ADD COLUMN tenant TEXT;
