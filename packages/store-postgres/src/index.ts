// @switchboard/store-postgres: the store replicas share (docs/design.md §5 "Several replicas").

export type { Migration } from './migrations.js';
export { loadMigrations } from './migrations.js';
export type { PostgresStore, PostgresStoreOptions } from './postgres-store.js';
export { createPostgresStore } from './postgres-store.js';
export { probePostgresStore } from './probe-postgres.js';
export type { PostgresProbeOptions } from './probe-postgres.js';
