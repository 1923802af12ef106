-- 0008_seq_without_autoincrement: `seq` of `journal` and `outbox` becomes a plain rowid alias.
-- AUTOINCREMENT wrote the `sqlite_sequence` page in every commit that inserted a row (two of the
-- ~20 WAL pages a message cost); without it SQLite gives a new row the largest `seq` + 1, so a new
-- row still sorts after every row present, which is all the stores read `seq` for (acceptance
-- order, add order per chat). A `seq` freed by deleting the newest row may be given again; no row
-- keeps another's `seq`. Both tables hold only work in progress, so the rebuild copies little;
-- `history` keeps AUTOINCREMENT, as rebuilding it could hold a large file's start for minutes.
CREATE TABLE journal_by_rowid (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  attempt INTEGER NOT NULL,
  payload TEXT NOT NULL,
  retry_at INTEGER
);
INSERT INTO journal_by_rowid (seq, id, attempt, payload, retry_at)
  SELECT seq, id, attempt, payload, retry_at FROM journal;
DROP TABLE journal;
ALTER TABLE journal_by_rowid RENAME TO journal;

CREATE TABLE outbox_by_rowid (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  channel TEXT NOT NULL,
  chat TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  not_before INTEGER NOT NULL,
  last_error TEXT,
  payload TEXT NOT NULL
);
INSERT INTO outbox_by_rowid (seq, id, channel, chat, attempts, not_before, last_error, payload)
  SELECT seq, id, channel, chat, attempts, not_before, last_error, payload FROM outbox;
DROP TABLE outbox;
ALTER TABLE outbox_by_rowid RENAME TO outbox;
CREATE INDEX outbox_chat ON outbox (channel, chat, seq);
