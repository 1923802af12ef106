-- 0012_audit_tenant: each audit record names the tenant whose channel received its message
-- (docs/design.md §10); records written before tenants existed are the tenant `default`'s. Like
-- every other filter of GET /admin/audit it gets an index that ends in (at, id).
ALTER TABLE audit ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default';
CREATE INDEX audit_tenant ON audit (tenant, at, id);
