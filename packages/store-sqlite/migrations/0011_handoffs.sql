-- 0011_handoffs: sessions an operator took over (core HandoffStore). One row per session in
-- handoff; its transcript's entries are rows of their own, keyed by the handoff's session and
-- `seq` (numbered from 1 by the store, so a reader resumes after the last it saw). `id` is the
-- held message's or the reply's id, unique per handoff: a message held twice, or a reply sent
-- twice, is written once. Ending a handoff deletes its rows; a new one numbers from 1 again.
CREATE TABLE handoff (
  session TEXT PRIMARY KEY,
  reason TEXT NOT NULL,
  started_by TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  active_at INTEGER NOT NULL,
  pipeline TEXT,
  origin TEXT,
  held INTEGER NOT NULL,
  unread INTEGER NOT NULL,
  waiting_since INTEGER,
  last_seq INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX handoff_active_at ON handoff (active_at);

CREATE TABLE handoff_entry (
  session TEXT NOT NULL,
  seq INTEGER NOT NULL,
  id TEXT NOT NULL,
  entry TEXT NOT NULL,
  PRIMARY KEY (session, seq)
) WITHOUT ROWID;
CREATE UNIQUE INDEX handoff_entry_id ON handoff_entry (session, id);
