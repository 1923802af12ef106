import type { TestContext } from 'vitest';
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

/** The pools a contract test opened: each closed after the test, and a peer of each shared one. */
export class PoolsUnderTest {
  private readonly harnesses = new Map<QueryPool, StoreHarness<QueryPool>>();

  /** Keeps `harness` for `closeAll`; returns its pool. */
  add(harness: StoreHarness<QueryPool>): QueryPool {
    this.harnesses.set(harness.store, harness);
    return harness.store;
  }

  /** A second replica's pool over `pool`'s store; skips the test when the implementation is not shared. */
  async peerOf(pool: QueryPool, context: TestContext): Promise<QueryPool> {
    const harness = this.harnesses.get(pool);
    if (harness?.peer === undefined) context.skip('the pool is not shared by replicas');
    return (harness as Required<StoreHarness<QueryPool>>).peer();
  }

  async closeAll(): Promise<void> {
    const harnesses = [...this.harnesses.values()];
    this.harnesses.clear();
    for (const harness of harnesses) await harness.close();
  }
}
