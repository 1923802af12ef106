-- 0006_outbox_head: each chat's head (its lowest `seq` in `outbox`), so that a claim walks the
-- heads of a channel in seq order through `outbox_head_order` and stops at the first due one the
-- process has not claimed, instead of scanning every pending row of the channel. Triggers keep
-- it in step with `outbox` inside the same statement, so it commits and rolls back with it.
-- `not_before` is the head row's, copied so that the walk reads the index alone.
CREATE TABLE outbox_head (
  channel TEXT NOT NULL,
  chat TEXT NOT NULL,
  seq INTEGER NOT NULL,
  not_before INTEGER NOT NULL,
  PRIMARY KEY (channel, chat)
) WITHOUT ROWID;
CREATE INDEX outbox_head_order ON outbox_head (channel, seq, not_before);

INSERT INTO outbox_head (channel, chat, seq, not_before)
  SELECT channel, chat, seq, not_before FROM outbox AS o
  WHERE seq = (SELECT MIN(seq) FROM outbox WHERE channel = o.channel AND chat = o.chat);

-- `seq` only grows (AUTOINCREMENT): a row added to a chat that has a head is never its head.
CREATE TRIGGER outbox_head_add AFTER INSERT ON outbox BEGIN
  INSERT INTO outbox_head (channel, chat, seq, not_before)
    VALUES (new.channel, new.chat, new.seq, new.not_before)
    ON CONFLICT (channel, chat) DO NOTHING;
END;

-- The head removed: the chat's next row, if any, becomes its head.
CREATE TRIGGER outbox_head_remove AFTER DELETE ON outbox BEGIN
  DELETE FROM outbox_head WHERE channel = old.channel AND chat = old.chat AND seq = old.seq;
  INSERT INTO outbox_head (channel, chat, seq, not_before)
    SELECT channel, chat, seq, not_before FROM outbox
    WHERE channel = old.channel AND chat = old.chat ORDER BY seq LIMIT 1
    ON CONFLICT (channel, chat) DO NOTHING;
END;

CREATE TRIGGER outbox_head_reschedule AFTER UPDATE OF not_before ON outbox BEGIN
  UPDATE outbox_head SET not_before = new.not_before
    WHERE channel = new.channel AND chat = new.chat AND seq = new.seq;
END;
