import type { ChannelConfig, Config, PipelineConfig } from '@switchboard/config';

/** The sections a running gateway cannot take over: they need a restart. */
const RESTART_SECTIONS = ['server', 'admin', 'store', 'audit', 'shutdown', 'telemetry'] as const;

/** Entries of a list by id: added, changed (anything in the entry differs) and removed. */
export interface ListChanges<Entry extends { id: string }> {
  added: Entry[];
  changed: Entry[];
  removed: string[];
}

/** What a reload would change, section by section. */
export interface ConfigChanges {
  /** The config paths that differ and can only change with a restart (`server.port`…). */
  refused: string[];
  channels: ListChanges<ChannelConfig>;
  pipelines: ListChanges<PipelineConfig>;
  /** `concurrency` or `queue` differ. */
  limits: boolean;
  routing: boolean;
  /** One line per change, as the reload answers them: `channels.slack: added`, `routing`… */
  summary: string[];
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** The paths below `path` where `a` and `b` differ: leaves of objects, whole arrays and values. */
function differingPaths(a: unknown, b: unknown, path: string): string[] {
  const objects = (value: unknown): value is Record<string, unknown> =>
    typeof value === 'object' && value !== null && !Array.isArray(value);
  if (!objects(a) || !objects(b)) return same(a, b) ? [] : [path];
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  return keys.flatMap((key) => differingPaths(a[key], b[key], `${path}.${key}`));
}

function listChanges<Entry extends { id: string }>(
  current: readonly Entry[],
  next: readonly Entry[],
): ListChanges<Entry> {
  const before = new Map(current.map((entry) => [entry.id, entry]));
  const after = new Set(next.map((entry) => entry.id));
  return {
    added: next.filter((entry) => !before.has(entry.id)),
    changed: next.filter((entry) => before.has(entry.id) && !same(before.get(entry.id), entry)),
    removed: current.filter((entry) => !after.has(entry.id)).map((entry) => entry.id),
  };
}

function summaryOf(section: string, changes: ListChanges<{ id: string }>): string[] {
  return [
    ...changes.added.map((entry) => `${section}.${entry.id}: added`),
    ...changes.changed.map((entry) => `${section}.${entry.id}: changed`),
    ...changes.removed.map((id) => `${section}.${id}: removed`),
  ];
}

/** The top-level `quotas` and `quota_reply`, as the tenant `default` holds them. */
const defaultQuotas = (config: Config) => [config.tenants[0]?.quotas, config.tenants[0]?.quotaReply];

/**
 * What changes from `current` to `next`. Paths are those of the parsed config (camelCase where
 * the file says snake_case), and name no value: a secret's value never appears in an answer.
 */
export function configChanges(current: Config, next: Config): ConfigChanges {
  const refused = RESTART_SECTIONS.flatMap((section) =>
    differingPaths(current[section], next[section], section),
  );
  const channels = listChanges(current.channels, next.channels);
  const pipelines = listChanges(current.pipelines, next.pipelines);
  const limits = !same(current.concurrency, next.concurrency) || !same(current.queue, next.queue);
  // Each tenant's routing, and whose each channel and pipeline is, decide where messages go.
  const routing = !same(current.tenants, next.tenants);
  const tenants = listChanges(current.tenants.slice(1), next.tenants.slice(1));
  return {
    refused,
    channels,
    pipelines,
    limits,
    routing,
    summary: [
      ...summaryOf('channels', channels),
      ...summaryOf('pipelines', pipelines),
      ...differingPaths(current.concurrency, next.concurrency, 'concurrency'),
      ...differingPaths(current.queue, next.queue, 'queue'),
      // Read by the handoff desk at each use: in force once the reload's configuration is.
      ...differingPaths(current.handoff, next.handoff, 'handoff'),
      ...(same(current.routing, next.routing) ? [] : ['routing']),
      // The top-level quotas are the tenant `default`'s (`tenants[0]`), in force with routing.
      ...(same(defaultQuotas(current), defaultQuotas(next)) ? [] : ['quotas']),
      ...summaryOf('tenants', tenants),
    ],
  };
}
