-- 0013_journal_answered: a journaled message whose turn's replies are stored in the outbox is
-- marked in the outbox's own write (1), so that a restart before the write ending its delivery
-- follows it without running it again: the outbox already holds its answer and its outcome.
-- Rows journaled by an older build are unanswered: they run again after the upgrade, as before.
ALTER TABLE journal ADD COLUMN answered INTEGER NOT NULL DEFAULT 0;
