-- 0002_journal_retry_at: backoff due times survive a restart (ports/journal.ts `markRetry`).
-- `retry_at` (ms since the epoch) overrides the payload's `retryAtMs`, as `attempt` overrides
-- its attempt, so that markRetry does not rewrite the payload; NULL until a first retry.
-- Rows journaled by an older build have none: they run at once after the upgrade, as before.
ALTER TABLE journal ADD COLUMN retry_at INTEGER;
