/**
 * The Redis keys of one pool. Every key starts with the hash tag `{<prefix>}:`, so all of them
 * live in one Redis Cluster slot and every script touching them is Cluster-legal
 * (docs/design.md §5). The order is the KEYS order every script expects (lua/includes/pool.lua).
 */
export interface PoolKeys {
  /** `{<prefix>}:` — scripts build the per-session, per-message, per-pipeline and per-lease keys from it. */
  prefix: string;
  /** KEYS of every script, in order. */
  keys: string[];
  /** The pub/sub channel on which scripts announce that a claim may succeed. */
  runnableChannel: string;
  /** The live replicas (a sorted set by heartbeat deadline). */
  replicas: string;
}

const FIXED_KEYS = [
  'config',
  'counts',
  'sessions',
  'placed',
  'delayed',
  'leases',
  'dedup',
  'replicas',
  'seq',
  'pipelines',
  'settled',
] as const;

export function poolKeysOf(prefix: string): PoolKeys {
  const tagged = `{${prefix}}:`;
  return {
    prefix: tagged,
    keys: FIXED_KEYS.map((name) => `${tagged}${name}`),
    runnableChannel: `${tagged}runnable`,
    replicas: `${tagged}replicas`,
  };
}
