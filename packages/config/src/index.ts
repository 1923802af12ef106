// The public surface of @switchboard/config: load and validate switchboard.yaml.

export { configJsonSchema } from './config-json-schema.js';
export { configReference } from './config-reference.js';
export type { LoadedConfig, LoadedFile, ParseConfigOptions, TenantFile } from './load-config.js';
export { loadConfig, parseConfig } from './load-config.js';
export type {
  AuditConfig,
  ChannelConfig,
  Config,
  ConfigInput,
  PipelineConfig,
  StoreConfig,
  TenantInput,
  TracesConfig,
} from './schema.js';
export {
  AdminSchema,
  AuditSchema,
  ChannelSchema,
  ConfigSchema,
  DEFAULT_SQLITE_PATH,
  PipelineSchema,
  ShutdownSchema,
  StoreSchema,
  TelemetrySchema,
  TenantSchema,
  TracesSchema,
} from './schema.js';
export type { TenantConfig } from './tenants.js';
export { DEFAULT_TENANT, tenantOfChannel } from './tenants.js';
export type { Env } from './substitute.js';
export { substituteEnv } from './substitute.js';
