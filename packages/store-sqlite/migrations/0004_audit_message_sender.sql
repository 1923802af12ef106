-- 0004_audit_message_sender: the console's message page filters the audit log by message id and
-- by sender; like every other filter of GET /admin/audit they get an index that ends in (at, id),
-- so such a page is an index range scan, not a scan of the whole table.
CREATE INDEX audit_message ON audit (message_id, at, id);
CREATE INDEX audit_sender ON audit (sender_id, at, id);
