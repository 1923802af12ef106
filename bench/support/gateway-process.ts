import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ServerProcess, startServerProcess } from './server-process.js';
import { SETTINGS } from './settings.js';

const GATEWAY_CLI = fileURLToPath(new URL('../../apps/gateway/dist/cli.js', import.meta.url));
const PROFILE_DIR = fileURLToPath(new URL('../results/profiles', import.meta.url));

/** What differs between the gateways the benchmarks start: the stores, as YAML flow mappings. */
export interface BenchGatewayStores {
  /** Names the config file written into the folder. */
  name: string;
  /** The `store:` value, e.g. `{ kind: memory }`. */
  store: string;
  /** The `audit:` value; the default (SQLite beside the journal) when absent. */
  audit?: string;
  /** The `telemetry:` value; none (tracing off) when absent. */
  telemetry?: string;
}

/**
 * The benchmarks' gateway config: loopback on a free port, the HTTP channel at /v1 admitting
 * twice the load's connections, the echo pipeline as the no-op, default limits otherwise.
 */
function gatewayConfig(stores: BenchGatewayStores): string {
  return [
    'server: { host: 127.0.0.1, port: 0 }',
    `store: ${stores.store}`,
    ...(stores.audit === undefined ? [] : [`audit: ${stores.audit}`]),
    'channels:',
    `  - { id: api, type: openapi, prefix: /v1, max_concurrent_requests: ${Math.max(100, 2 * SETTINGS.httpConnections)} }`,
    'pipelines:',
    '  - { id: echo, type: echo }',
    'routing: { default: echo }',
    ...(stores.telemetry === undefined ? [] : [`telemetry: ${stores.telemetry}`]),
    '',
  ].join('\n');
}

/** Starts the built `switchboard serve` in `dir` (its working directory) and resolves once it listens. */
export function startGateway(stores: BenchGatewayStores, dir: string): Promise<ServerProcess> {
  const configPath = join(dir, `switchboard-${stores.name}.yaml`);
  writeFileSync(configPath, gatewayConfig(stores));
  const profile = SETTINGS.cpuProfile ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [];
  return startServerProcess([...profile, GATEWAY_CLI, 'serve', '-c', configPath], {
    cwd: dir,
    env: { LOG_LEVEL: 'info' },
  });
}
