import type {
  Concurrency,
  PipelinePolicySchema,
  QueryPool,
  QueueLimits,
  TenantShare,
} from '@switchboard/core';
import type { StoreHarness } from './store-harness.js';

/** What a pool factory is asked for by one contract test. */
export interface QueryPoolFactoryContext {
  /** The suite's clock; the pool must read time through it. */
  now(): number;
  concurrency: Concurrency;
  limits: QueueLimits;
  /** Each with the tenant it belongs to (none: the default tenant). */
  pipelines: Array<ReturnType<typeof PipelinePolicySchema.parse> & { tenant?: string | undefined }>;
  /** The tenants' shares (docs/design.md §10 "Fair shares"); none: every tenant has the default. */
  tenants?: readonly TenantShare[] | undefined;
}

export type QueryPoolFactory = (context: QueryPoolFactoryContext) => Promise<StoreHarness<QueryPool>>;
