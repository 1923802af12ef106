import { type ChildProcess, type ChildProcessByStdio, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { metricValueAt } from '@switchboard/testkit/prometheus';
import { afterEach } from 'vitest';

export { eventually, resolvesWithin } from '@switchboard/testkit/eventually';

/** The built CLI: end-to-end tests run the real `switchboard` process, as users do. */
export const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export interface ServeProcess {
  url: string;
  child: ChildProcess;
  logs: LogLine[];
  stderr: string[];
  dir: string;
  configPath: string;
  /** Sends `signal` and resolves the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  exited: Promise<number | null>;
}

/** A fresh temp folder for one test's config and data. */
export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'switchboard-e2e-'));
}

/** Adds a cleanup to run after the test (see `useCleanups`). */
export type Cleanup = (cleanup: () => Promise<unknown>) => void;

/**
 * Registers an `afterEach` that runs, last first, the cleanups a test added (kill a gateway,
 * close a fake server). Returns the function that adds one.
 */
export function useCleanups(): Cleanup {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return (cleanup) => cleanups.push(cleanup);
}

/** A test config: loopback on a free port and a SQLite file in `dir`, followed by `yaml`. */
export function testConfig(dir: string, yaml: string, server = 'host: 127.0.0.1, port: 0'): string {
  return `server: { ${server} }\nstore: { kind: sqlite, path: ${join(dir, 'data.db')} }\n${yaml}`;
}

/** Writes `yaml` into `dir` and returns its path. */
export function writeConfig(dir: string, yaml: string, name = 'switchboard.yaml'): string {
  const path = join(dir, name);
  writeFileSync(path, yaml);
  return path;
}

/**
 * Starts `switchboard serve` in a fresh folder on `testConfig` with `yaml` (and `server` as its
 * server line) and `env` added to the environment. With `cleanup`, its kill is registered there;
 * without, the caller stops it.
 */
export async function serveYaml(
  yaml: string,
  options: { cleanup?: Cleanup; env?: NodeJS.ProcessEnv; server?: string } = {},
): Promise<ServeProcess> {
  const dir = tempDir();
  const configPath = writeConfig(dir, testConfig(dir, yaml, options.server));
  const gateway = await startServe({ dir, configPath, env: options.env });
  options.cleanup?.(() => gateway.stop('SIGKILL'));
  return gateway;
}

/**
 * Starts `switchboard serve` with `channels` (YAML items of the `channels` list, indented two
 * spaces) answered by the echo pipeline, the audit log off.
 */
export function serveEchoChannels(channels: string): Promise<ServeProcess> {
  return serveYaml(`
audit: { ignored: true }
channels:
${channels.replace(/^\n+|\s+$/g, '')}
pipelines:
  - { id: echo, type: echo }
routing:
  default: echo
`);
}

/** How many messages of `channel` have ended in `outcome`, as the gateway's /metrics counts them. */
export function outcomeCount(gateway: ServeProcess, channel: string, outcome: string): Promise<number> {
  return metricValueAt(gateway.url, `switchboard_messages_total{channel="${channel}",outcome="${outcome}"}`);
}

/**
 * Starts `switchboard serve -c <config>` in `dir` and resolves once it logs `listening`. The
 * config should bind port 0; the bound address is read from that log line. `onSpawn` gets the
 * process and its log lines so far at once, for tests that act while it starts.
 */
export function startServe(options: {
  dir: string;
  configPath: string;
  env?: NodeJS.ProcessEnv;
  onSpawn?: (child: ChildProcess, logs: LogLine[]) => void;
  /** A program that runs the gateway in its own process, e.g. `setpriv` with its options. */
  wrapper?: string[];
}): Promise<ServeProcess> {
  const [file, ...args] = [
    ...(options.wrapper ?? []),
    process.execPath,
    CLI,
    'serve',
    '-c',
    options.configPath,
  ];
  const child = spawn(file as string, args, {
    cwd: options.dir,
    env: { ...process.env, LOG_LEVEL: 'debug', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: LogLine[] = [];
  options.onSpawn?.(child, logs);
  const stderr: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    let buffered = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      let newline = buffered.indexOf('\n');
      while (newline >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        newline = buffered.indexOf('\n');
        try {
          const entry = JSON.parse(line) as LogLine;
          logs.push(entry);
          if (entry.msg === 'listening') {
            resolve({
              url: String(entry.address),
              child,
              logs,
              stderr,
              dir: options.dir,
              configPath: options.configPath,
              exited,
              stop: (signal = 'SIGTERM') => {
                child.kill(signal);
                return exited;
              },
            });
          }
        } catch {
          stderr.push(line);
        }
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
    void exited.then((code) =>
      reject(new Error(`switchboard serve exited with ${code} before listening:\n${stderr.join('')}`)),
    );
  });
}

/** How a process that ran to completion ended, and what it printed. */
export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Reads `child`'s output until its streams close; never throws on a non-zero exit. */
export function collectOutput(child: ChildProcessByStdio<null, Readable, Readable>): Promise<RunResult> {
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Runs a CLI verb to completion. */
export function runCli(
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv },
): Promise<RunResult> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return collectOutput(child);
}

export interface JsonAnswer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary response shapes
  body: Record<string, any> | null;
}

/** POSTs JSON to the gateway and returns status and parsed body. */
export async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<JsonAnswer> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary response shapes
    body: text === '' ? null : (JSON.parse(text) as Record<string, any>),
  };
}

/**
 * POSTs `{}` to `url` `count` times in one TCP write (HTTP pipelining), so the server parses
 * them in one read and runs their handlers together; requests sent one by one by fetch reach it
 * in separate event-loop turns, each finished before the next arrives. Resolves each answer's
 * status and JSON body, in order.
 */
export function simultaneousPosts(url: string, count: number) {
  const { hostname, port, pathname } = new URL(url);
  const request = (last: boolean) =>
    `POST ${pathname} HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: ${last ? 'close' : 'keep-alive'}\r\n\r\n{}`;
  return new Promise<Array<{ status: number; body: { error?: { code: string } } }>>((resolve, reject) => {
    let raw = Buffer.alloc(0);
    const socket = connect(Number(port), hostname, () => {
      socket.write(Array.from({ length: count }, (_, index) => request(index === count - 1)).join(''));
    });
    socket.on('data', (chunk: Buffer) => {
      raw = Buffer.concat([raw, chunk]);
    });
    socket.once('error', reject);
    socket.once('end', () => {
      const answers = [];
      let rest = raw.toString();
      while (rest.length > 0) {
        const headEnd = rest.indexOf('\r\n\r\n');
        const head = rest.slice(0, headEnd);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1]);
        const body = rest.slice(headEnd + 4, headEnd + 4 + length);
        answers.push({ status: Number(head.split(' ')[1]), body: JSON.parse(body) });
        rest = rest.slice(headEnd + 4 + length);
      }
      resolve(answers);
    });
  });
}

export async function get(url: string, headers: Record<string, string> = {}) {
  const response = await fetch(url, { headers });
  const text = await response.text();
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary response shapes
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: response.status, body };
}
