import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { processExists } from '@switchboard/testkit/process';
import { describe, expect, it } from 'vitest';
import {
  CLI,
  collectOutput,
  post,
  runCli,
  startServe,
  tempDir,
  useCleanups,
  writeConfig,
} from './serve-process.js';

const cleanup = useCleanups();

/** Answers each turn with who it runs as and what reading each path of the turn's text gave. */
const PROBE_WORKER = fileURLToPath(new URL('./fixtures/probe-worker.mjs', import.meta.url));

// Recognisable values that no worker may read.
const ADMIN_TOKEN = 'SECRET-admin-token-isolation-e2e';
const TELEGRAM_BOT_TOKEN = '123456:SECRET-telegram-isolation-e2e';
const API_KEY = 'SECRET-api-key-isolation-e2e';

/** `nobody` and `nogroup` of Debian: an unprivileged user the workers run as. */
const WORKER = { uid: 65534, gid: 65534, home: '/nonexistent' };

/** The unprivileged user a gateway runs as in the control, where its workers run as it. */
const GATEWAY_USER = 1000;

/**
 * Switching users needs root. A test process that is not root skips these tests with a loud
 * notice, and fails when CI=true (CI runs as root and must never skip them silently).
 */
function privileged(): boolean {
  if (process.getuid?.() === 0) return true;
  if (process.env.CI === 'true') throw new Error('the worker isolation tests need root and CI=true');
  console.warn(
    '\n!!! SKIPPING the worker isolation tests: they need root (set CI=true to fail instead) !!!\n',
  );
  return false;
}

const canSwitchUsers = privileged();

interface ProbeReport {
  pid: number;
  uid: number;
  gid: number;
  groups: number[];
  home: string | null;
  reads: Record<string, { text?: string; error?: string }>;
  descriptors: Array<string | undefined>;
}

/**
 * A gateway folder laid out as on a server: a folder other users may enter (as /etc or /srv),
 * the config in it 0600, the database in `data/`, which the gateway creates.
 */
function gatewayFolder(pipelineKeys: string) {
  const dir = tempDir();
  chmodSync(dir, 0o755);
  const databasePath = join(dir, 'data', 'switchboard.db');
  const configPath = writeConfig(
    dir,
    `server: { host: 127.0.0.1, port: 0 }
store: { kind: sqlite, path: ${JSON.stringify(databasePath)} }
admin: { token: "\${SWITCHBOARD_ADMIN_TOKEN}" }
channels: [{ id: api, type: openapi, api_keys: [${API_KEY}] }]
pipelines:
  - id: agent
    type: process
    command: ${JSON.stringify(process.execPath)}
    args: [${JSON.stringify(PROBE_WORKER)}]
${pipelineKeys}routing: { default: agent }
`,
  );
  chmodSync(configPath, 0o600);
  return { dir, configPath, databasePath };
}

/**
 * Starts the gateway (in `wrapper`, when given) with the secrets in its environment and has its
 * worker probe them. `prepare` may change the folder's files first.
 */
async function probeFromWorker(
  pipelineKeys: string,
  options: {
    wrapper?: string[];
    prepare?: (folder: ReturnType<typeof gatewayFolder>) => void;
    /** The gateway's environment; default the admin and bot tokens themselves. */
    env?: NodeJS.ProcessEnv;
  } = {},
) {
  const folder = gatewayFolder(pipelineKeys);
  options.prepare?.(folder);
  const { dir, configPath, databasePath } = folder;
  const gateway = await startServe({
    dir,
    configPath,
    env: options.env ?? { SWITCHBOARD_ADMIN_TOKEN: ADMIN_TOKEN, TELEGRAM_BOT_TOKEN },
    wrapper: options.wrapper,
  });
  cleanup(() => gateway.stop('SIGKILL'));
  const environ = `/proc/${gateway.child.pid}/environ`;
  const paths = [environ, configPath, databasePath, `${databasePath}-wal`];
  const answer = await post(
    `${gateway.url}/v1/messages`,
    { session_id: 's1', user_id: 'u', text: JSON.stringify(paths) },
    { authorization: `Bearer ${API_KEY}` },
  );
  expect(answer.body).toMatchObject({ status: 'completed' });
  const replyText = String(answer.body?.replies[0].text);
  return {
    gateway,
    replyText,
    report: JSON.parse(replyText) as ProbeReport,
    environ,
    configPath,
    databasePath,
  };
}

describe.runIf(canSwitchUsers)('process workers isolated with run_as (end to end)', () => {
  describe('when run_as names an unprivileged user and group', () => {
    it('runs the worker as them with no other group, and it can read neither the gateway’s environment, nor the config, nor the database', async () => {
      const { replyText, report, environ, configPath, databasePath } = await probeFromWorker(
        '    run_as: { user: nobody, group: nogroup }\n',
      );

      expect(report).toMatchObject({ uid: WORKER.uid, gid: WORKER.gid, groups: [], home: WORKER.home });
      expect(report.reads).toEqual({
        [environ]: { error: 'EACCES' },
        [configPath]: { error: 'EACCES' },
        [databasePath]: { error: 'EACCES' },
        [`${databasePath}-wal`]: { error: 'EACCES' },
      });
      expect(report.descriptors.filter((target) => target?.startsWith(databasePath))).toEqual([]);
      expect(replyText).not.toContain(ADMIN_TOKEN);
      expect(replyText).not.toContain('SECRET-');
    });

    it('created the data folder 0700 and the database and its WAL 0600', async () => {
      const { databasePath } = await probeFromWorker('    run_as: { user: nobody, group: nogroup }\n');

      expect(statSync(join(databasePath, '..')).mode & 0o777).toBe(0o700);
      expect(statSync(databasePath).mode & 0o777).toBe(0o600);
      expect(statSync(`${databasePath}-wal`).mode & 0o777).toBe(0o600);
    });
  });

  describe('when the gateway is root with only the capabilities of the documented container setup', () => {
    // docs/deploy-docker.md "Process workers as another user": cap_drop ALL, then SETUID, SETGID,
    // KILL and DAC_OVERRIDE; the data folder and the config belong to another user (the image's
    // `node`, the host's owner of the mounted file). A bounding set is what Docker's cap_drop sets.
    const containerCapabilities = (capabilities: string) => [
      'setpriv',
      `--bounding-set=-all,${capabilities}`,
      '--inh-caps=-all',
      '--',
    ];
    const ownedByAnotherUser = ({ dir, configPath }: ReturnType<typeof gatewayFolder>) => {
      mkdirSync(join(dir, 'data'), { mode: 0o700 });
      chownSync(join(dir, 'data'), 1000, 1000);
      chownSync(configPath, 1000, 1000);
    };

    it('starts its workers isolated, and stops them when it drains', async () => {
      const { gateway, report, replyText, environ, configPath, databasePath } = await probeFromWorker(
        '    run_as: { user: nobody, group: nogroup }\n',
        {
          wrapper: containerCapabilities('+setuid,+setgid,+kill,+dac_override'),
          prepare: ownedByAnotherUser,
        },
      );

      expect(report).toMatchObject({ uid: WORKER.uid, gid: WORKER.gid, groups: [] });
      expect(Object.values(report.reads)).toEqual(Array(4).fill({ error: 'EACCES' }));
      expect(Object.keys(report.reads)).toEqual([environ, configPath, databasePath, `${databasePath}-wal`]);
      expect(replyText).not.toContain('SECRET-');

      expect(await gateway.stop('SIGTERM')).toBe(0);
      expect(processExists(report.pid)).toBe(false);
    });

    it('refuses to start without CAP_KILL, which stopping another user’s workers needs', async () => {
      const { dir, configPath } = gatewayFolder('    run_as: { user: nobody, group: nogroup }\n');
      const child = spawn(
        'setpriv',
        [
          ...containerCapabilities('+setuid,+setgid,+dac_override'),
          process.execPath,
          CLI,
          'serve',
          '-c',
          configPath,
        ],
        {
          cwd: dir,
          env: { ...process.env, SWITCHBOARD_ADMIN_TOKEN: ADMIN_TOKEN },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );

      const { code, stderr } = await collectOutput(child);

      expect(code).toBe(1);
      expect(stderr).toContain('pipelines[0].run_as: the gateway (uid 0) lacks CAP_KILL');
    });
  });

  describe('when run_as is not set', () => {
    it('refuses to start a root gateway with a process pipeline, whose workers would be root', async () => {
      const { dir, configPath, databasePath } = gatewayFolder('');

      const result = await runCli(['serve', '-c', configPath], {
        cwd: dir,
        env: { SWITCHBOARD_ADMIN_TOKEN: ADMIN_TOKEN },
      });

      expect(result.code).toBe(1);
      expect(result.stderr).toContain('switchboard: SB_PIPELINE_RUN_AS_INVALID');
      expect(result.stderr).toContain(
        'pipelines[0].run_as: required when the gateway runs as root (uid 0) or holds CAP_SETUID',
      );
      expect(existsSync(databasePath)).toBe(false);
    });

    it('runs the worker as the gateway’s own unprivileged user, which reads the gateway’s environment, config and database', async () => {
      // The control: what run_as keeps from a worker. A gateway of its own user runs workers as it.
      const { report, environ, configPath, databasePath } = await probeFromWorker('', {
        wrapper: ['setpriv', `--reuid=${GATEWAY_USER}`, `--regid=${GATEWAY_USER}`, '--clear-groups', '--'],
        prepare: ({ dir, configPath }) => {
          chownSync(dir, GATEWAY_USER, GATEWAY_USER);
          chownSync(configPath, GATEWAY_USER, GATEWAY_USER);
        },
      });

      expect(report.uid).toBe(GATEWAY_USER);
      expect(report.reads[environ]?.text).toContain(`SWITCHBOARD_ADMIN_TOKEN=${ADMIN_TOKEN}`);
      expect(report.reads[environ]?.text).toContain(`TELEGRAM_BOT_TOKEN=${TELEGRAM_BOT_TOKEN}`);
      expect(report.reads[configPath]?.text).toContain('admin: { token: "${SWITCHBOARD_ADMIN_TOKEN}" }');
      expect(report.reads[databasePath]?.text).toMatch(/^SQLite format 3/);
    });
  });

  describe('when a secret is given as NAME_FILE', () => {
    it('leaves it out of the gateway’s environment, and the gateway uses it', async () => {
      const secrets = tempDir();
      const tokenFile = join(secrets, 'admin-token');
      writeFileSync(tokenFile, `${ADMIN_TOKEN}\n`, { mode: 0o600 });
      const { gateway } = await probeFromWorker('    run_as: { user: nobody, group: nogroup }\n', {
        env: { SWITCHBOARD_ADMIN_TOKEN: undefined, SWITCHBOARD_ADMIN_TOKEN_FILE: tokenFile },
      });

      const environ = readFileSync(`/proc/${gateway.child.pid}/environ`, 'latin1');
      expect(environ).toContain(`SWITCHBOARD_ADMIN_TOKEN_FILE=${tokenFile}`);
      expect(environ).not.toContain(ADMIN_TOKEN);
      const admin = (token: string) =>
        fetch(`${gateway.url}/admin/queues`, { headers: { authorization: `Bearer ${token}` } });
      expect((await admin(ADMIN_TOKEN)).status).toBe(200);
      expect((await admin('not-the-admin-token')).status).toBe(401);
    });
  });

  describe('when run_as cannot be applied or would not isolate', () => {
    /** Runs `switchboard serve` on `configPath` to its exit. */
    async function refusedStart(dir: string, configPath: string, env: NodeJS.ProcessEnv = {}) {
      const result = await runCli(['serve', '-c', configPath], {
        cwd: dir,
        env: { SWITCHBOARD_ADMIN_TOKEN: ADMIN_TOKEN, ...env },
      });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('switchboard: SB_PIPELINE_RUN_AS_INVALID: workers cannot be isolated');
      expect(result.stderr).not.toContain('SECRET-');
      return result.stderr;
    }

    it('refuses to start, before opening the database, naming an unknown user', async () => {
      const { dir, configPath, databasePath } = gatewayFolder('    run_as: { user: no-such-worker-user }\n');

      const stderr = await refusedStart(dir, configPath);

      expect(stderr).toContain('pipelines[0].run_as.user: no user "no-such-worker-user" in /etc/passwd');
      expect(existsSync(databasePath)).toBe(false);
    });

    it('is refused by `switchboard config check` as well, which a start would refuse', async () => {
      const { dir, configPath } = gatewayFolder('    run_as: { user: no-such-worker-user }\n');

      const result = await runCli(['config', 'check', '-c', configPath], {
        cwd: dir,
        env: { SWITCHBOARD_ADMIN_TOKEN: ADMIN_TOKEN },
      });

      expect(result.code).toBe(1);
      expect(result.stderr).toContain(
        'pipelines[0].run_as.user: no user "no-such-worker-user" in /etc/passwd',
      );
    });

    it('refuses root and an unknown group', async () => {
      const { dir, configPath } = gatewayFolder('    run_as: { user: root, group: no-such-group }\n');

      const stderr = await refusedStart(dir, configPath);

      expect(stderr).toContain('pipelines[0].run_as.user: root (uid 0)');
      expect(stderr).toContain('pipelines[0].run_as.group: no group "no-such-group" in /etc/group');
    });

    it('refuses a config file, a secret file and a data folder the workers could read, naming each and its mode', async () => {
      const { dir, configPath, databasePath } = gatewayFolder(
        '    run_as: { user: nobody, group: nogroup }\n',
      );
      chmodSync(configPath, 0o644);
      mkdirSync(join(dir, 'data'), { mode: 0o755 });
      chmodSync(join(dir, 'data'), 0o755);
      const tokenFile = join(dir, 'admin-token');
      writeFileSync(tokenFile, `${ADMIN_TOKEN}\n`, { mode: 0o640 });
      chownSync(tokenFile, 0, WORKER.gid);

      const stderr = await refusedStart(dir, configPath, {
        SWITCHBOARD_ADMIN_TOKEN: undefined,
        SWITCHBOARD_ADMIN_TOKEN_FILE: tokenFile,
      });

      expect(stderr).toContain(`configuration file ${configPath}: mode 0644`);
      expect(stderr).toContain(`secret file ${tokenFile}: mode 0640 (uid 0, gid ${WORKER.gid})`);
      expect(stderr).toContain(`database folder ${join(dir, 'data')}: mode 0755`);
      expect(existsSync(databasePath)).toBe(false);
    });

    it('refuses a config, a database file and a folder above a secret file that the workers could write, naming each', async () => {
      const { dir, configPath, databasePath } = gatewayFolder(
        '    run_as: { user: nobody, group: nogroup }\n',
      );
      chmodSync(configPath, 0o622);
      mkdirSync(join(dir, 'data'), { mode: 0o711 });
      chmodSync(join(dir, 'data'), 0o711);
      writeFileSync(`${databasePath}-wal`, '', { mode: 0o606 });
      chmodSync(`${databasePath}-wal`, 0o606);
      const secrets = join(dir, 'secrets');
      mkdirSync(secrets, { mode: 0o733 });
      chmodSync(secrets, 0o733);
      const tokenFile = join(secrets, 'admin-token');
      writeFileSync(tokenFile, `${ADMIN_TOKEN}\n`, { mode: 0o600 });

      const stderr = await refusedStart(dir, configPath, {
        SWITCHBOARD_ADMIN_TOKEN: undefined,
        SWITCHBOARD_ADMIN_TOKEN_FILE: tokenFile,
      });

      expect(stderr).toContain(`configuration file ${configPath}: mode 0622 (uid 0, gid 0) lets the workers`);
      expect(stderr).toMatch(new RegExp(`configuration file ${configPath}: [^\\n]* write it: chmod 600 it`));
      expect(stderr).toMatch(
        new RegExp(`database file ${databasePath}-wal: mode 0606 [^\\n]* read and write it`),
      );
      expect(stderr).toMatch(new RegExp(`folder ${secrets}: mode 0733 [^\\n]* replace ${tokenFile} in it`));
      expect(stderr).not.toContain(`database folder ${join(dir, 'data')}`);
      expect(stderr).not.toContain(`secret file ${tokenFile}`);
    });

    it('refuses a config file an ACL lets the workers read, whatever its mode bits say', async () => {
      const { dir, configPath } = gatewayFolder('    run_as: { user: nobody, group: nogroup }\n');
      execFileSync('setfacl', ['-m', `u:${WORKER.uid}:r`, configPath]);

      const stderr = await refusedStart(dir, configPath);

      expect(stderr).toContain(`configuration file ${configPath}: mode 0640 (uid 0, gid 0)`);
      expect(stderr).toMatch(
        new RegExp(`configuration file ${configPath}: [^\\n]* read it: chmod 600 it \\(and \`setfacl -b\``),
      );
    });

    it('accepts a world-readable config inside a folder the workers cannot enter', async () => {
      const { dir, configPath } = gatewayFolder('    run_as: { user: nobody, group: nogroup }\n');
      chmodSync(configPath, 0o644);
      chmodSync(dir, 0o700);

      const result = await runCli(['config', 'check', '-c', configPath], {
        cwd: dir,
        env: { SWITCHBOARD_ADMIN_TOKEN: ADMIN_TOKEN },
      });

      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
    });

    it('refuses run_as while the admin API or an HTTP channel admits loopback callers without a credential', async () => {
      const { dir, configPath } = gatewayFolder('    run_as: { user: nobody, group: nogroup }\n');
      writeFileSync(
        configPath,
        readFileSync(configPath, 'utf8')
          .replace('admin: { token: "${SWITCHBOARD_ADMIN_TOKEN}" }\n', '')
          .replace(
            `api_keys: [${API_KEY}] }]`,
            `api_keys: [${API_KEY}] }, { id: open, type: openapi, prefix: /open }]`,
          ),
      );

      const stderr = await refusedStart(dir, configPath);

      expect(stderr).toContain('admin.token: required with run_as');
      expect(stderr).toContain('channels[1].api_keys: required with run_as');
      expect(stderr).not.toContain('channels[0].api_keys');
    });

    it('refuses to start as a gateway that cannot switch users, whose own uid run_as names', async () => {
      const { dir, configPath } = gatewayFolder('    run_as: { user: nobody, group: nogroup }\n');
      chownSync(configPath, WORKER.uid, WORKER.gid);
      chownSync(dir, WORKER.uid, WORKER.gid);
      const child = spawn(process.execPath, [CLI, 'serve', '-c', configPath], {
        cwd: dir,
        env: { ...process.env, SWITCHBOARD_ADMIN_TOKEN: ADMIN_TOKEN },
        stdio: ['ignore', 'pipe', 'pipe'],
        uid: WORKER.uid,
        gid: WORKER.gid,
      });

      const { code, stderr } = await collectOutput(child);

      expect(code).toBe(1);
      expect(stderr).toContain("pipelines[0].run_as.user: uid 65534 is the gateway's own");
      expect(stderr).toContain(
        'pipelines[0].run_as: the gateway (uid 65534) lacks CAP_SETUID, CAP_SETGID, CAP_KILL',
      );
    });
  });
});
