/**
 * The Redis keys of one pool. Every key starts with the hash tag `{<prefix>}:`, so all of them
 * live in one Redis Cluster slot (docs/design.md §5). Scripts declare only the fixed keys; they
 * build the per-item keys from the prefix, which Redis OSS Cluster runs because the slot is the
 * same, but which a server enforcing declared keys may refuse. The order is the KEYS order
 * every script expects (lua/pool/includes/preamble.lua).
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
  'enqueued',
  'tenants',
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
