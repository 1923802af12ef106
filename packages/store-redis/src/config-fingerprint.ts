import {
  type Concurrency,
  DEFAULT_TENANT,
  type PoolPipelinePolicy,
  type QueueLimits,
  SwitchboardError,
  type TenantShare,
} from '@switchboard/core';

/**
 * What replicas sharing a pool must agree on (docs/design.md §5): the pool's limits and each
 * pipeline's scheduling, plus — when the caller passes whole pipeline policies — retry and
 * timeout. Endpoints, headers and secrets may differ per replica and are not part of it.
 */
export interface SharedPipelinePolicy extends PoolPipelinePolicy {
  retry?: { maxAttempts: number; baseDelayMs: number; maxDelayMs: number };
  timeoutMs?: number;
}

export interface SharedConfig {
  concurrency: Concurrency;
  limits: QueueLimits;
  pipelines: readonly SharedPipelinePolicy[];
  /** The shares of the tenants that configure one (docs/design.md §10 "Fair shares"). */
  tenants?: readonly TenantShare[] | undefined;
}

/** `[config path, value]` pairs, sorted by path: the fingerprint compares whole, names by path. */
type Fingerprint = Array<[string, string]>;

const ms = (value: number) => `${value}ms`;
const limit = (value: number) => (Number.isFinite(value) ? String(value) : 'unlimited');

const tenantOf = (policy: PoolPipelinePolicy) => policy.tenant ?? DEFAULT_TENANT;

/** Whether `share` differs from the share of a tenant that configures none. */
const isConfigured = (share: TenantShare) =>
  Number.isFinite(share.maxConcurrency) || Number.isFinite(share.maxPending) || share.weight !== 1;

/**
 * The fingerprint as the config file's paths name the values, e.g. `pipelines.p.max_concurrency`.
 * `partitions`: how many the sessions spread over (docs/design.md §5 "Partitions"); replicas
 * counting otherwise would put one session's messages in two partitions. Named only past one.
 */
export function fingerprintOf(config: SharedConfig, partitions = 1): string {
  const entries: Fingerprint = [
    ['concurrency.pipeline', String(config.concurrency.global)],
    ['concurrency.session', String(config.concurrency.perSession)],
    ['queue.max_pending', String(config.limits.maxPending)],
    ['queue.max_pending_per_session', String(config.limits.maxPendingPerSession)],
  ];
  for (const policy of config.pipelines) {
    const path = `pipelines.${policy.id}`;
    const { aggregation } = policy;
    entries.push(
      [path, 'configured'],
      [`${path}.max_concurrency`, limit(policy.maxConcurrency)],
      [`${path}.aggregation.enabled`, String(aggregation.enabled)],
      [`${path}.aggregation.delay`, ms(aggregation.delayMs)],
      [`${path}.aggregation.max_wait`, ms(aggregation.maxWaitMs)],
      [`${path}.aggregation.max_messages`, String(aggregation.maxMessages)],
      [`${path}.busy_mode`, policy.busyMode],
    );
    if (policy.retry !== undefined) {
      entries.push(
        [`${path}.retry.max_attempts`, String(policy.retry.maxAttempts)],
        [`${path}.retry.base_delay`, ms(policy.retry.baseDelayMs)],
        [`${path}.retry.max_delay`, ms(policy.retry.maxDelayMs)],
      );
    }
    if (policy.timeoutMs !== undefined) entries.push([`${path}.timeout`, ms(policy.timeoutMs)]);
    // Only another tenant than the default is named: a pool of one tenant keeps the fingerprint
    // it had before tenants were shared, so replicas of both versions agree.
    if (tenantOf(policy) !== DEFAULT_TENANT) entries.push([`${path}.tenant`, tenantOf(policy)]);
  }
  // Likewise only a share that is not the default one: the gateway lists every tenant's.
  for (const share of (config.tenants ?? []).filter(isConfigured)) {
    const path = `tenants.${share.id}`;
    entries.push(
      [path, 'configured'],
      [`${path}.concurrency`, limit(share.maxConcurrency)],
      [`${path}.weight`, String(share.weight)],
      [`${path}.max_pending`, limit(share.maxPending)],
    );
  }
  if (partitions > 1) entries.push(['store.partitions', String(partitions)]);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify(entries);
}

/**
 * One `path: this replica X, the shared store Y` line per difference; a pipeline only one side
 * has is one line, not one per field.
 */
export function differencesOf(mine: string, stored: string): string[] {
  const ours = new Map(JSON.parse(mine) as Fingerprint);
  const theirs = new Map(JSON.parse(stored) as Fingerprint);
  const paths = [...new Set([...ours.keys(), ...theirs.keys()])].sort();
  const oneSided = paths.filter((path) => ours.has(path) !== theirs.has(path));
  return paths
    .filter((path) => ours.get(path) !== theirs.get(path))
    .filter((path) => !oneSided.some((parent) => path.startsWith(`${parent}.`)))
    .map(
      (path) =>
        `${path}: this replica ${ours.get(path) ?? 'absent'}, the shared store ${theirs.get(path) ?? 'absent'}`,
    );
}

/**
 * The refusal of a replica whose configuration differs from the running replicas': at start, or
 * of its enqueues while it runs (then with `retryAfterMs`: another replica may take them).
 */
export function configMismatch(mine: string, stored: string, retryAfterMs?: number): SwitchboardError {
  const differences = differencesOf(mine, stored);
  return new SwitchboardError('SB_STORE_CONFIG_MISMATCH', {
    message: `this replica's limits or pipeline policies differ from those of the replicas running on the shared store:\n${differences.join('\n')}`,
    details: { differences },
    retryAfterMs,
  });
}

/**
 * Whether tenants compete for the pool's slots: the pipelines have several tenants, or a tenant
 * configures a share that differs from the default one. Only then do the scripts count each
 * tenant's use (lua/pool/includes/tenant-shares.lua): one tenant pays nothing per message.
 */
export function tenantsCompete(config: SharedConfig): boolean {
  return (config.tenants ?? []).some(isConfigured) || new Set(config.pipelines.map(tenantOf)).size > 1;
}

/**
 * The config hash the scripts read (lua/pool/includes/preamble.lua) as field, value pairs: limits,
 * per pipeline its slot limit (absent: unlimited) and readiness rules, and while tenants compete
 * each pipeline's tenant and the tenants' shares (lua/pool/includes/tenant-shares.lua).
 */
export function configFieldsOf(config: SharedConfig): string[] {
  const fields = [
    'global',
    String(config.concurrency.global),
    'perSession',
    String(config.concurrency.perSession),
    'maxPending',
    String(config.limits.maxPending),
    'maxPendingPerSession',
    String(config.limits.maxPendingPerSession),
  ];
  for (const { id, maxConcurrency, aggregation, busyMode } of config.pipelines) {
    if (Number.isFinite(maxConcurrency)) fields.push(`max:${id}`, String(maxConcurrency));
    fields.push(
      `aggregate:${id}`,
      aggregation.enabled ? '1' : '0',
      `delay:${id}`,
      String(aggregation.delayMs),
      `maxWait:${id}`,
      String(aggregation.maxWaitMs),
      `maxMessages:${id}`,
      String(aggregation.maxMessages),
      `collect:${id}`,
      busyMode === 'collect' ? '1' : '0',
    );
  }
  if (!tenantsCompete(config)) return fields;
  fields.push('tenants', '1');
  for (const policy of config.pipelines) fields.push(`tenant:${policy.id}`, tenantOf(policy));
  for (const share of config.tenants ?? []) {
    if (Number.isFinite(share.maxConcurrency)) fields.push(`tmax:${share.id}`, String(share.maxConcurrency));
    fields.push(`weight:${share.id}`, String(share.weight));
    if (Number.isFinite(share.maxPending)) fields.push(`tpending:${share.id}`, String(share.maxPending));
  }
  return fields;
}
