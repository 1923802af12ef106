// @switchboard/store-sqlite: the embedded default store (docs/design.md §2 "Durability").

export type { AuditReaderOptions, SqliteAuditReader } from './audit-reader.js';
export { openAuditReader } from './audit-reader.js';
export { SCHEMA_VERSION } from './migrations.js';
export type { AuditReader } from './sqlite-audit-log.js';
export type { SqliteStore, SqliteStoreOptions } from './sqlite-store.js';
export { createSqliteStore } from './sqlite-store.js';
export { probeSqliteFile } from './probe-sqlite.js';
export type { WriteCounts } from './write-counts.js';
