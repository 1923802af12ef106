import { z } from 'zod';
import { numeric } from '../schema/numeric.js';

/**
 * A tenant's part of the pool (docs/design.md §10 "Fair shares"): `tenants[].concurrency`,
 * `weight` and `max_pending`, the keys a tenant entry adds for scheduling.
 */
export const TenantShareFields = {
  /** Its turns at once, within `concurrency.pipeline`; none: only the global limit caps it. */
  concurrency: numeric(z.number().int().min(1)).optional(),
  /** Its share of the free slots while tenants compete: turns in proportion to the weights. */
  weight: numeric(z.number().int().min(1).max(1000)).default(1),
  /** Its waiting messages at most; none: only `queue.max_pending` bounds them. */
  max_pending: numeric(z.number().int().min(1)).optional(),
};

const TenantShareSchema = z.object(TenantShareFields);

/** A tenant's part of the pool, as the pool applies it. */
export interface TenantShare {
  id: string;
  maxConcurrency: number;
  weight: number;
  maxPending: number;
}

/** The share tenant `id` gets from its parsed `fields`. */
export function tenantShareOf(id: string, fields: z.output<typeof TenantShareSchema>): TenantShare {
  return {
    id,
    maxConcurrency: fields.concurrency ?? Number.POSITIVE_INFINITY,
    weight: fields.weight,
    maxPending: fields.max_pending ?? Number.POSITIVE_INFINITY,
  };
}

/** The share of a tenant with none configured: the default tenant's, and a tenant's without keys. */
export function defaultTenantShare(id: string): TenantShare {
  return { id, maxConcurrency: Number.POSITIVE_INFINITY, weight: 1, maxPending: Number.POSITIVE_INFINITY };
}
