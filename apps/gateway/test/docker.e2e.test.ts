import { type ChildProcess, spawn } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '@switchboard/config';
import { durationMs } from '@switchboard/core';
import { DCLinter } from 'dclint';
import { DockerfileParser, type Instruction } from 'dockerfile-ast';
import { validate } from 'dockerfile-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type RunResult, collectOutput, get, post, tempDir } from './serve-process.js';

// No Docker engine runs on the development machines or in CI (TOOLCHAIN "Docker"): these tests
// lint the files and perform the image's own steps outside Docker, on this machine's Node and
// on the image's.

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const DOCKER_DIR = join(ROOT, 'docker');
const DOCKERFILE = join(DOCKER_DIR, 'Dockerfile');
const COMPOSE = join(DOCKER_DIR, 'compose.yaml');
const ENV_EXAMPLE = join(DOCKER_DIR, 'switchboard.env.example');
/** The config the image bakes in and compose mounts at /app/config. */
const CONTAINER_CONFIG = join(DOCKER_DIR, 'config', 'switchboard.yaml');
const CLUSTER_COMPOSE = join(DOCKER_DIR, 'compose.cluster.yaml');
/** The config the gateways of compose.cluster.yaml run. */
const CLUSTER_CONFIG = join(ROOT, 'config', 'examples', 'cluster.yaml');
const HAPROXY_CONFIG = join(DOCKER_DIR, 'haproxy', 'haproxy.cfg');
const PNPM = join(ROOT, 'node_modules', '.bin', 'pnpm');
// The node-gyp that pnpm runs for install scripts, as it does for better-sqlite3 in the image.
const NODE_GYP = join(ROOT, 'node_modules', 'pnpm', 'dist', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
/** Downloaded Node builds and native addons compiled for them, kept across runs. */
const CACHE = join(tmpdir(), 'switchboard-node-cache');
const API_KEY = 'docker-e2e-key';
/** The image's deploy command, less its destination. */
const DEPLOY_ARGS = ['--filter', '@switchboard/gateway', 'deploy', '--prod', '--legacy'];
const DEV_TOOLS = ['vitest', 'vite', 'typescript', 'turbo', '@biomejs/biome', 'pnpm', '@switchboard/testkit'];

/** The Dockerfile's instructions by build stage name; `''` holds those before the first FROM. */
function readStages(): Map<string, Instruction[]> {
  const stages = new Map<string, Instruction[]>([['', []]]);
  let current = stages.get('') as Instruction[];
  for (const instruction of DockerfileParser.parse(readFileSync(DOCKERFILE, 'utf8')).getInstructions()) {
    if (instruction.getKeyword() === 'FROM') {
      current = [];
      stages.set(instruction.getArgumentsContent()?.split(/\s+AS\s+/i)[1] ?? '', current);
    }
    current.push(instruction);
  }
  return stages;
}

const STAGES = readStages();

function stage(name: string): Instruction[] {
  const instructions = STAGES.get(name);
  if (instructions === undefined) throw new Error(`docker/Dockerfile has no stage "${name}"`);
  return instructions;
}

/** The arguments of the one `keyword` instruction of a stage, without its flags. */
function argumentsOf(stageName: string, keyword: string): string {
  const found = stage(stageName).filter((instruction) => instruction.getKeyword() === keyword);
  if (found.length !== 1)
    throw new Error(`stage "${stageName}" has ${found.length} ${keyword} instructions, expected 1`);
  return found[0]?.getArgumentsContent() ?? '';
}

/** The commands of a stage's RUN instructions, continuation lines joined. */
function runCommands(stageName: string): string[] {
  return stage(stageName)
    .filter((instruction) => instruction.getKeyword() === 'RUN')
    .map((instruction) => (instruction.getArgumentsContent() ?? '').replace(/\s+/g, ' ').trim());
}

const IMAGE_NODE_MAJOR = /^NODE_MAJOR=(\d+)$/.exec(argumentsOf('', 'ARG'))?.[1] ?? 'missing';
/** The image's HEALTHCHECK command, e.g. `["node", "-e", "…"]`. */
const HEALTHCHECK = JSON.parse(argumentsOf('runtime', 'HEALTHCHECK').replace(/^CMD\s+/, '')) as string[];

/** dclint's findings on a compose file: every rule at its default level, ports quoted as biome formats YAML. */
function composeLintMessages(file: string): unknown[] {
  const rules = { 'require-quotes-in-ports': [1, { quoteType: 'double' }] };
  const linter = new DCLinter({ rules, quiet: true, debug: false, exclude: [] });
  return linter.lintFiles([file], false).flatMap((result: { messages: unknown[] }) => result.messages);
}

/** Variable names the env file made from docker/switchboard.env.example can set, each set to `set`. */
function envExampleNames(): Record<string, string> {
  const names = [...readFileSync(ENV_EXAMPLE, 'utf8').matchAll(/^#?([A-Z][A-Z0-9_]*)=/gm)].map(
    (match) => match[1] as string,
  );
  return Object.fromEntries(names.map((name) => [name, 'set']));
}

const running = new Set<ChildProcess>();

/**
 * Spawns a command in its own process group, so that cleanup also ends what it started (pnpm's
 * node-gyp and compilers), and tracks it until its output is closed.
 */
function start(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv }) {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  running.add(child);
  const closed = new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      running.delete(child);
      resolve(code);
    });
  });
  return { child, closed };
}

afterAll(() => {
  for (const child of running) if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
});

/** Runs a command to completion; never throws on a non-zero exit. */
async function run(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<RunResult> {
  const { child, closed } = start(command, args, options);
  const [result] = await Promise.all([collectOutput(child), closed]);
  return result;
}

/** Runs a command that must succeed; a failure throws with its output. */
async function mustRun(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<RunResult> {
  const result = await run(command, args, options);
  if (result.code !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} exited with ${result.code}:\n${result.stdout}\n${result.stderr}`,
    );
  }
  return result;
}

interface Gateway {
  port: number;
  logs: Array<{ msg?: string }>;
  /** Resolves the exit code once the process has exited and its output has been read. */
  exited: Promise<number | null>;
  /** Sends SIGTERM, as `docker stop` does, and resolves the exit code. */
  stop(): Promise<number | null>;
}

/** Starts a gateway process and resolves once it logs `listening`. */
function launch(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<Gateway> {
  const { child, closed: exited } = start(command, args, options);
  const logs: Array<{ msg?: string; address?: string }> = [];
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const entry = JSON.parse(line) as { msg?: string; address?: string };
      logs.push(entry);
      if (entry.msg !== 'listening') return;
      const stop = () => {
        child.kill('SIGTERM');
        return exited;
      };
      resolve({ port: Number(new URL(String(entry.address)).port), logs, exited, stop });
    });
    exited.then(
      (code) => reject(new Error(`the gateway exited with ${code} before listening:\n${stderr}`)),
      reject,
    );
  });
}

/**
 * The environment a container gets: the image's ENV and the compose env file, nothing else (no
 * NODE_PATH, which pnpm's bin shims point at the workspace's modules).
 */
function containerEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    PORT: '0',
    SWITCHBOARD_API_KEY: API_KEY,
    ...extra,
  };
}

/** Runs the image's HEALTHCHECK command with `node` against `port`; resolves its exit code. */
async function healthcheck(node: string, port: number): Promise<number | null> {
  expect(HEALTHCHECK[0]).toBe('node');
  return (await run(node, HEALTHCHECK.slice(1), { env: { PATH: process.env.PATH, PORT: String(port) } }))
    .code;
}

/**
 * What the image promises once started: healthy, answers clients that hold the API key and only
 * them, keeps its SQLite file in the data folder, and on SIGTERM drains and exits 0.
 */
async function expectServesAndDrains(gateway: Gateway, options: { node: string; app: string }) {
  const base = `http://127.0.0.1:${gateway.port}`;
  expect(await get(`${base}/healthz`)).toEqual({ status: 200, body: { status: 'ok' } });
  expect(await healthcheck(options.node, gateway.port)).toBe(0);

  // The console's built assets ship in the deployed folder (through @switchboard/console).
  const consolePage = await fetch(`${base}/admin/`);
  expect(consolePage.status).toBe(200);
  expect(await consolePage.text()).toMatch(/src="\/admin\/assets\/[^"]+\.js"/);

  const message = { session_id: 's1', user_id: 'u1', text: 'hello' };
  const answer = await post(`${base}/v1/messages`, message, { authorization: `Bearer ${API_KEY}` });
  expect(answer.status).toBe(200);
  expect(answer.body).toMatchObject({ status: 'completed', replies: [{ text: 'hello' }] });
  expect((await post(`${base}/v1/messages`, message)).status).toBe(401);
  expect(existsSync(join(options.app, 'data', 'switchboard.db'))).toBe(true);

  expect(await gateway.stop()).toBe(0);
  const lifecycle = gateway.logs
    .map((entry) => entry.msg)
    .filter((msg) => msg === 'draining' || msg === 'stopped');
  expect(lifecycle).toEqual(['draining', 'stopped']);
  expect(await healthcheck(options.node, gateway.port)).toBe(1);
}

/**
 * The image's Node: this machine's when the majors match, otherwise the official build from the
 * npm registry (the `node-<os>-<arch>` package ships `bin/node` and the `include/node` headers
 * that node-gyp needs), downloaded once into CACHE.
 */
async function imageNode(major: string): Promise<{ node: string; nodeDir: string }> {
  if (process.versions.node.split('.')[0] === major) {
    return { node: process.execPath, nodeDir: dirname(dirname(process.execPath)) };
  }
  const name = `node-${process.platform}-${process.arch}`;
  const nodeDir = join(CACHE, `${name}-${major}`);
  const node = join(nodeDir, 'bin', 'node');
  if (!existsSync(node)) {
    mkdirSync(CACHE, { recursive: true });
    const staging = mkdtempSync(join(CACHE, 'download-'));
    try {
      const packed = await mustRun(
        'npm',
        ['pack', `${name}@${major}`, '--pack-destination', staging, '--json'],
        { cwd: staging },
      );
      const [{ filename }] = JSON.parse(packed.stdout) as [{ filename: string }];
      await mustRun('tar', ['-xzf', join(staging, filename), '-C', staging]);
      // A rename is atomic: a concurrent run either finds the whole folder or none.
      if (!existsSync(node)) renameSync(join(staging, 'package'), nodeDir);
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
  }
  return { node, nodeDir };
}

/**
 * Replaces `path` with a copy of `source` renamed over it. The deployed files are hard links into
 * pnpm's store, shared with every other install on the machine: writing through one, or changing
 * its mode, would change them all.
 */
function replaceFile(path: string, source: string, mode?: number): void {
  const staged = `${path}.${process.pid}`;
  copyFileSync(source, staged);
  if (mode !== undefined) chmodSync(staged, mode);
  renameSync(staged, path);
}

/** Whether `node` can open a database with the better-sqlite3 installed at `addonDir`. */
async function addonLoads(node: string, addonDir: string): Promise<boolean> {
  const result = await run(node, ['-e', "new (require('./'))(':memory:').close()"], {
    cwd: addonDir,
    env: { PATH: process.env.PATH },
  });
  return result.code === 0;
}

/**
 * Makes the deployed better-sqlite3 load under `node`, compiling it against that Node's headers
 * as the image's build stage does under its own Node. The binary is cached per addon and Node
 * version, since compiling SQLite takes about a minute.
 */
async function buildAddonFor(image: { node: string; nodeDir: string }, out: string): Promise<void> {
  // Resolved from the real path of store-sqlite, whose sibling it is in pnpm's layout: a plain
  // lookup could fall back to NODE_PATH, which pnpm's bin shims point at the workspace.
  const storeSqlite = realpathSync(join(out, 'node_modules', '@switchboard', 'store-sqlite'));
  const addonManifest = createRequire(join(storeSqlite, 'package.json')).resolve(
    'better-sqlite3/package.json',
  );
  const addonDir = dirname(addonManifest);
  if (!addonDir.startsWith(`${realpathSync(out)}/`))
    throw new Error(`better-sqlite3 resolved outside the deployed folder: ${addonDir}`);
  if (await addonLoads(image.node, addonDir)) return;

  const { version } = JSON.parse(readFileSync(addonManifest, 'utf8')) as { version: string };
  const nodeVersion = (await mustRun(image.node, ['-p', 'process.version'])).stdout.trim();
  const cached = join(
    CACHE,
    `better-sqlite3-${version}-node-${nodeVersion}-${process.platform}-${process.arch}.node`,
  );
  const build = join(addonDir, 'build');
  const binary = join(build, 'Release', 'better_sqlite3.node');
  if (existsSync(cached)) {
    replaceFile(binary, cached);
  } else {
    // Unlinked first, so that the compiler writes new files rather than through store links.
    rmSync(build, { recursive: true, force: true });
    await mustRun(
      image.node,
      [NODE_GYP, 'rebuild', '--release', '--jobs=max', `--nodedir=${image.nodeDir}`],
      {
        cwd: addonDir,
        env: {
          ...process.env,
          PATH: `${dirname(image.node)}:${process.env.PATH}`,
          npm_config_nodedir: image.nodeDir,
        },
      },
    );
    const staged = `${cached}.${process.pid}`;
    copyFileSync(binary, staged);
    renameSync(staged, cached);
  }
  expect(await addonLoads(image.node, addonDir)).toBe(true);
}

describe('docker image', () => {
  describe('when docker/Dockerfile is linted', () => {
    it('reports no problems', () => {
      expect(validate(readFileSync(DOCKERFILE, 'utf8'))).toEqual([]);
    });
  });

  describe('when its stages are read', () => {
    it('installs from the lockfile and deploys the gateway with production dependencies only', () => {
      const commands = runCommands('build');
      expect(commands).toContain('pnpm install --frozen-lockfile');
      expect(commands).toContain(['pnpm', ...DEPLOY_ARGS, '/out'].join(' '));
    });

    it('runs `switchboard serve` as the node user under tini, on an even (LTS) Node line', () => {
      expect(Number(IMAGE_NODE_MAJOR) % 2).toBe(0);
      expect(argumentsOf('runtime', 'FROM')).toBe('node:${NODE_MAJOR}-trixie-slim AS runtime');
      expect(JSON.parse(argumentsOf('runtime', 'ENTRYPOINT'))).toEqual(['tini', '--', 'switchboard']);
      expect(JSON.parse(argumentsOf('runtime', 'CMD'))).toEqual(['serve']);
      expect(argumentsOf('runtime', 'USER')).toBe('node');
      expect(argumentsOf('runtime', 'WORKDIR')).toBe('/app');
      expect(argumentsOf('runtime', 'EXPOSE')).toBe('8080');
      expect(JSON.parse(argumentsOf('runtime', 'VOLUME'))).toEqual(['/app/data']);
      expect(argumentsOf('runtime', 'ENV').split(/\s+/)).toEqual(
        expect.arrayContaining(['PORT=8080', 'SWITCHBOARD_CONFIG=/app/config/switchboard.yaml']),
      );
    });

    it('keeps /app/data to the node user alone and has a worker user for run_as', () => {
      const commands = runCommands('runtime').join(' && ').split(' && ');
      expect(commands).toEqual(
        expect.arrayContaining([
          'chown node:node /app/data',
          'chmod 0700 /app/data',
          'groupadd --system --gid 10001 worker',
          'useradd --system --uid 10001 --gid worker --home-dir /home/worker --create-home --shell /usr/sbin/nologin worker',
        ]),
      );
    });
  });
});

describe('docker/compose.yaml', () => {
  const compose = parse(readFileSync(COMPOSE, 'utf8'));
  const gateway = compose.services.gateway;

  describe('when checked against the compose schema and dclint rules', () => {
    it('reports no problems', () => {
      expect(composeLintMessages(COMPOSE)).toEqual([]);
    });
  });

  describe('when read', () => {
    it('builds one gateway from the image and restarts it unless stopped', () => {
      expect(Object.keys(compose.services)).toEqual(['gateway']);
      expect(join(DOCKER_DIR, gateway.build.context, gateway.build.dockerfile)).toBe(DOCKERFILE);
      expect(gateway.restart).toBe('unless-stopped');
      expect(gateway.ports).toEqual(['127.0.0.1:8080:8080']);
      expect(gateway.env_file).toEqual([{ path: 'switchboard.env', required: true }]);
    });

    it('mounts the config folder read-only and keeps the SQLite file on a named volume', () => {
      const config = gateway.volumes.find((volume: { target: string }) => volume.target === '/app/config');
      expect(config).toEqual({ type: 'bind', source: './config', target: '/app/config', read_only: true });
      expect(join(DOCKER_DIR, config.source, 'switchboard.yaml')).toBe(CONTAINER_CONFIG);
      expect(gateway.volumes).toContainEqual({ type: 'volume', source: 'data', target: '/app/data' });
      expect(Object.keys(compose.volumes)).toEqual(['data']);
    });

    it("checks health with the image's own command", () => {
      expect(gateway.healthcheck.test).toEqual(['CMD', ...HEALTHCHECK]);
    });

    it("gives the gateway longer to stop than the config's drain timeout", async () => {
      const config = await loadConfig(CONTAINER_CONFIG, { env: { SWITCHBOARD_API_KEY: API_KEY } });
      expect(durationMs().parse(gateway.stop_grace_period)).toBeGreaterThan(config.shutdown.drainTimeoutMs);
    });
  });

  describe('when the env file is made from docker/switchboard.env.example', () => {
    it('names every variable the container config needs', async () => {
      await expect(loadConfig(CONTAINER_CONFIG, { env: envExampleNames() })).resolves.toBeDefined();
    });
  });
});

describe('docker/compose.cluster.yaml', () => {
  const compose = parse(readFileSync(CLUSTER_COMPOSE, 'utf8'));
  const GATEWAYS = ['gateway-1', 'gateway-2', 'gateway-3'];
  const gateway = compose.services['gateway-1'];

  /**
   * What a gateway container sees: the env file's variables (ASSISTANT_URL as a URL, which the
   * http pipeline checks) under the compose `environment`.
   */
  const gatewayEnv = () => ({
    ...envExampleNames(),
    ASSISTANT_URL: 'http://assistant:8000/turn',
    ...gateway.environment,
  });

  describe('when checked against the compose schema and dclint rules', () => {
    it('reports no problems', () => {
      expect(composeLintMessages(CLUSTER_COMPOSE)).toEqual([]);
    });
  });

  describe('when read', () => {
    it('runs three identical gateways built from the image, a load balancer, PostgreSQL and Redis', () => {
      expect(Object.keys(compose.services).sort()).toEqual([...GATEWAYS, 'lb', 'postgres', 'redis']);
      for (const name of GATEWAYS) expect(compose.services[name]).toEqual(gateway);
      expect(join(DOCKER_DIR, gateway.build.context, gateway.build.dockerfile)).toBe(DOCKERFILE);
      expect(gateway.env_file).toEqual([{ path: 'switchboard.env', required: true }]);
      expect(gateway.healthcheck.test).toEqual(['CMD', ...HEALTHCHECK]);
      expect(gateway.depends_on).toEqual({
        postgres: { condition: 'service_healthy' },
        redis: { condition: 'service_healthy' },
      });
      expect(gateway.ports).toBeUndefined();
    });

    it('mounts config/examples read-only and runs cluster.yaml from it', () => {
      expect(gateway.volumes).toEqual([
        { type: 'bind', source: '../config/examples', target: '/app/config', read_only: true },
      ]);
      const configInContainer = gateway.environment.SWITCHBOARD_CONFIG as string;
      expect(dirname(configInContainer)).toBe('/app/config');
      expect(join(DOCKER_DIR, '../config/examples', configInContainer.slice('/app/config/'.length))).toBe(
        CLUSTER_CONFIG,
      );
    });

    it('points every gateway at the compose Redis and PostgreSQL', async () => {
      const config = await loadConfig(CLUSTER_CONFIG, { env: gatewayEnv() });
      expect(config.store).toMatchObject({ kind: 'redis', url: 'redis://redis:6379' });
      expect(config.audit).toMatchObject({ kind: 'postgres' });
      const database = new URL((config.audit as { url: string }).url);
      expect(`${database.hostname}:${database.port}${database.pathname}`).toBe(
        `postgres:5432/${compose.services.postgres.environment.POSTGRES_DB}`,
      );
      expect(database.username).toBe(compose.services.postgres.environment.POSTGRES_USER);
      // The one password, given to PostgreSQL and to pg (PGPASSWORD) from the same variable.
      expect(gateway.environment.PGPASSWORD).toBe(compose.services.postgres.environment.POSTGRES_PASSWORD);
    });

    it('runs Redis with AOF fsynced on every write and no eviction, on a named volume', () => {
      const redis = compose.services.redis;
      const flags = (redis.command as string[]).slice(1).join(' ');
      expect(redis.command[0]).toBe('redis-server');
      expect(flags).toContain('--appendonly yes');
      expect(flags).toContain('--appendfsync always');
      expect(flags).toContain('--maxmemory-policy noeviction');
      expect(redis.volumes).toEqual([{ type: 'volume', source: 'redis', target: '/data' }]);
      expect(compose.services.postgres.volumes).toEqual([
        { type: 'volume', source: 'postgres', target: '/var/lib/postgresql/data' },
      ]);
      expect(Object.keys(compose.volumes).sort()).toEqual(['postgres', 'redis']);
    });

    it('balances over the three gateways, checking /readyz, published on loopback only', () => {
      const lb = compose.services.lb;
      expect(Object.keys(lb.depends_on).sort()).toEqual(GATEWAYS);
      expect(lb.ports).toEqual(['127.0.0.1:8080:8080']);
      expect(lb.volumes).toContainEqual({
        type: 'bind',
        source: './haproxy',
        target: '/usr/local/etc/haproxy',
        read_only: true,
      });
      const haproxy = readFileSync(HAPROXY_CONFIG, 'utf8');
      const servers = [...haproxy.matchAll(/^\s*server\s+\S+\s+([^:\s]+):(\d+)/gm)];
      expect(servers.map(([, host]) => host)).toEqual(GATEWAYS);
      expect(servers.map(([, , port]) => port)).toEqual(['8080', '8080', '8080']);
      expect(haproxy).toMatch(/^\s*option httpchk GET \/readyz$/m);
    });

    it('keeps the load balancer waiting longer than the longest wait: true request', async () => {
      const config = await loadConfig(CLUSTER_CONFIG, { env: gatewayEnv() });
      const serverTimeout = /^\s*timeout server (\S+)$/m.exec(readFileSync(HAPROXY_CONFIG, 'utf8'))?.[1];
      const api = config.channels.find((channel) => channel.type === 'openapi') as {
        maxWaitTimeoutMs: number;
      };
      expect(durationMs().parse(serverTimeout)).toBeGreaterThan(api.maxWaitTimeoutMs);
    });

    it('restarts every service unless stopped and checks the health of each', () => {
      for (const [name, service] of Object.entries(compose.services) as Array<
        [string, Record<string, unknown>]
      >) {
        expect({ name, restart: service.restart }).toEqual({ name, restart: 'unless-stopped' });
        expect({ name, healthcheck: service.healthcheck !== undefined }).toEqual({ name, healthcheck: true });
      }
    });

    it("gives each gateway longer to stop than the cluster config's drain timeout", async () => {
      const config = await loadConfig(CLUSTER_CONFIG, { env: gatewayEnv() });
      for (const name of GATEWAYS) {
        expect(durationMs().parse(compose.services[name].stop_grace_period)).toBeGreaterThan(
          config.shutdown.drainTimeoutMs,
        );
      }
    });
  });
});

describe('production folder (the image build steps, outside Docker)', () => {
  let work: string;
  /** The deployed gateway: the image's /out, copied to /app. */
  let out: string;
  /** The container's working directory: config/ (the mount) and data/ (the volume). */
  let app: string;
  let cli: string;
  let config: string;

  beforeAll(async () => {
    work = tempDir();
    out = join(work, 'out');
    app = join(work, 'app');
    cli = join(out, 'dist', 'cli.js');
    config = join(app, 'config', 'switchboard.yaml');
    // The image's deploy command, with its destination here (the workspace is built first).
    await mustRun(PNPM, [...DEPLOY_ARGS, out], { cwd: ROOT });
    mkdirSync(join(app, 'config'), { recursive: true });
    mkdirSync(join(app, 'data'));
    copyFileSync(CONTAINER_CONFIG, config);
  }, 300_000);

  afterAll(() => {
    rmSync(work, { recursive: true, force: true });
  });

  describe('when deployed', () => {
    it('holds the built gateway and no development tools', () => {
      expect(existsSync(cli)).toBe(true);
      const installed = readdirSync(join(out, 'node_modules', '.pnpm'));
      const names = (tool: string) =>
        installed.filter((entry) => entry.startsWith(`${tool.replace('/', '+')}@`));
      expect(DEV_TOOLS.flatMap(names)).toEqual([]);
      expect(names('better-sqlite3')).toHaveLength(1);
    });
  });

  describe(`when started on this machine's Node (${process.version})`, () => {
    it('serves, checks healthy, answers with the API key and drains on SIGTERM', async () => {
      const child = await launch(process.execPath, [cli, 'serve', '-c', config], {
        cwd: app,
        env: containerEnv(),
      });
      await expectServesAndDrains(child, { node: process.execPath, app });
    });

    it('refuses to start while SWITCHBOARD_API_KEY is unset, naming it', async () => {
      const { SWITCHBOARD_API_KEY: _unset, ...env } = containerEnv();
      const result = await run(process.execPath, [cli, 'serve', '-c', config], { cwd: app, env });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('environment variable SWITCHBOARD_API_KEY is not set');
    });
  });

  describe(`when started on the image's Node (${IMAGE_NODE_MAJOR}) as its ENTRYPOINT does`, () => {
    let image: { node: string; nodeDir: string };

    beforeAll(async () => {
      image = await imageNode(IMAGE_NODE_MAJOR);
      await buildAddonFor(image, out);
    }, 300_000);

    it('serves, checks healthy, answers with the API key and drains on SIGTERM', async () => {
      // The image's RUN makes dist/cli.js executable and links it as /usr/local/bin/switchboard.
      replaceFile(cli, cli, 0o755);
      const bin = join(work, 'bin');
      mkdirSync(bin);
      symlinkSync(cli, join(bin, 'switchboard'));
      const entrypoint = JSON.parse(argumentsOf('runtime', 'ENTRYPOINT')) as string[];
      const command = JSON.parse(argumentsOf('runtime', 'CMD')) as string[];
      // tini is PID 1 in the image only; here the gateway receives the signal itself.
      const [program, ...args] = [...entrypoint.slice(2), ...command];
      const child = await launch(program as string, args, {
        cwd: app,
        env: containerEnv({
          PATH: `${dirname(image.node)}:${bin}:${process.env.PATH}`,
          SWITCHBOARD_CONFIG: config,
        }),
      });
      await expectServesAndDrains(child, { node: image.node, app });
    });
  });
});
