import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { startFakeDiscord } from '@switchboard/testkit/discord';
import { describe, expect, it } from 'vitest';
import {
  type LogLine,
  eventually,
  get,
  post,
  serveYaml,
  startServe,
  tempDir,
  testConfig,
  useCleanups,
  writeConfig,
} from './serve-process.js';

const cleanup = useCleanups();

const routingYaml = (rules: string) => `pipelines: [{ id: echo, type: echo }]
routing:
  default: echo
  rules:
${rules}
`;
const config = (dir: string, rules: string) => testConfig(dir, routingYaml(rules));
const DROP_ADS =
  '    - { name: drop-ads, type: message_content, operator: contains, value: "buy now", pipeline: __discard__ }';
const DROP_SPAM =
  '    - { name: drop-spam, type: message_content, operator: contains, value: "spam", pipeline: __discard__ }';

async function serve() {
  const gateway = await serveYaml(routingYaml(DROP_ADS), { cleanup });
  const send = (text: string) => post(`${gateway.url}/v1/messages`, { session_id: 's', user_id: 'u', text });
  return { gateway, dir: gateway.dir, configPath: gateway.configPath, send };
}

describe('operations (end to end)', () => {
  describe('when the routing rules change on disk', () => {
    it('POST /admin/reload swaps them, and a bad file is refused keeping the old rules', async () => {
      const { gateway, dir, configPath, send } = await serve();
      expect((await send('spam')).body?.status).toBe('completed');

      writeFileSync(configPath, config(dir, `${DROP_ADS}\n${DROP_SPAM}`));
      const reload = await post(`${gateway.url}/admin/reload`, {});
      expect(reload).toMatchObject({ status: 200, body: { changed: ['routing'] } });
      expect((await send('spam')).body).toMatchObject({ status: 'discarded', rule: 'drop-spam' });

      writeFileSync(
        configPath,
        config(
          dir,
          '    - { name: broken, type: message_content, operator: regex, value: "([", pipeline: echo }',
        ),
      );
      const refused = await post(`${gateway.url}/admin/reload`, {});
      expect(refused.status).toBe(400);
      expect(refused.body?.error.message).toContain('routing.rules[0].value: invalid regular expression');
      expect((await send('spam')).body).toMatchObject({ status: 'discarded', rule: 'drop-spam' });
    });

    it('SIGHUP reloads them too, and logs a refusal for a bad file', async () => {
      const { gateway, dir, configPath, send } = await serve();
      writeFileSync(configPath, config(dir, DROP_SPAM));
      gateway.child.kill('SIGHUP');
      await eventually(() => gateway.logs.some((line) => line.msg === 'routing reloaded'));
      expect((await send('spam')).body).toMatchObject({ status: 'discarded', rule: 'drop-spam' });
      expect((await send('buy now')).body?.status).toBe('completed');

      writeFileSync(configPath, 'routing: { default: nope }\n');
      gateway.child.kill('SIGHUP');
      await eventually(() => gateway.logs.some((line) => String(line.msg).startsWith('reload refused')));
      expect((await send('spam')).body).toMatchObject({ status: 'discarded', rule: 'drop-spam' });
    });
  });

  describe('when a SIGHUP arrives while the gateway is still starting', () => {
    // A whole start plus a reload: the default 20 s is too tight on a loaded machine.
    it('holds it, keeps starting, serves, and applies the reload once listening', {
      timeout: 60_000,
    }, async () => {
      // A Discord channel whose login the fake holds keeps the start going for as long as needed.
      const discord = await startFakeDiscord();
      cleanup(() => discord.close());
      discord.holdConnections();
      const dir = tempDir();
      const channels = `channels:
  - { id: api, type: openapi }
  - { id: dc, type: discord, token: "${discord.token}", api_url: "${discord.url}" }
`;
      const configPath = writeConfig(dir, channels + config(dir, DROP_ADS));
      let child: ChildProcess | undefined;
      let logs: LogLine[] = [];
      const starting = startServe({
        dir,
        configPath,
        onSpawn: (spawned, lines) => {
          child = spawned;
          logs = lines;
          cleanup(async () => spawned.kill('SIGKILL'));
        },
      });
      await eventually(() => discord.stats.connections > 0, 30_000, 'the discord login');

      writeFileSync(configPath, channels + config(dir, DROP_SPAM));
      child?.kill('SIGHUP');
      await eventually(() => logs.some((line) => line.msg.startsWith('reload requested while starting')));
      expect(logs.some((line) => line.msg === 'listening')).toBe(false);
      discord.releaseReconnect();

      const gateway = await starting;
      await eventually(() => gateway.logs.some((line) => line.msg === 'routing reloaded'));
      const spam = await post(`${gateway.url}/v1/messages`, { session_id: 's', user_id: 'u', text: 'spam' });
      expect(spam.body).toMatchObject({ status: 'discarded', rule: 'drop-spam' });
    });
  });

  describe('when operators look at the running gateway', () => {
    it('serves health, readiness, Prometheus metrics, queue stats and the OpenAPI document', async () => {
      const { gateway, send } = await serve();
      await send('hello');
      await send('buy now');
      expect((await get(`${gateway.url}/healthz`)).status).toBe(200);
      const ready = await get(`${gateway.url}/readyz`);
      expect(ready.status).toBe(200);
      expect(ready.body.checks).toMatchObject({
        draining: { ok: true },
        store: { ok: true },
        'channel.api': { ok: true },
      });

      const metrics = await get(`${gateway.url}/metrics`);
      expect(metrics.body).toContain(
        'switchboard_messages_total{channel="api",outcome="completed",reason="",tenant="default"} 1',
      );
      expect(metrics.body).toContain(
        'switchboard_messages_total{channel="api",outcome="discarded",reason="rule",tenant="default"} 1',
      );
      for (const name of [
        'switchboard_inflight{scope="replica"} 0',
        'switchboard_active_sessions 1',
        'switchboard_queue_pending{scope="replica"} 0',
        'switchboard_queue_wait_seconds_count{tenant="default"} 1',
        'switchboard_pipeline_duration_seconds_count{pipeline="echo",result="completed"} 1',
        'switchboard_retries_total',
      ]) {
        expect(metrics.body).toContain(name);
      }
      // The process and Node metrics every Prometheus setup expects, under their usual names.
      for (const name of [
        'process_resident_memory_bytes',
        'process_cpu_seconds_total',
        'nodejs_eventloop_lag_seconds',
        'nodejs_gc_duration_seconds',
      ]) {
        expect(metrics.body).toMatch(new RegExp(`^# TYPE ${name} `, 'm'));
      }
      // The first scrape builds the registry: the event-loop lag it reports is already sampled.
      const lagMin = Number(/^nodejs_eventloop_lag_min_seconds (\S+)$/m.exec(metrics.body)?.[1]);
      const lagMean = Number(/^nodejs_eventloop_lag_mean_seconds (\S+)$/m.exec(metrics.body)?.[1]);
      expect(lagMin).toBeGreaterThan(0);
      expect(lagMin).toBeLessThan(10);
      expect(Number.isFinite(lagMean)).toBe(true);

      expect((await get(`${gateway.url}/admin/queues`)).body).toMatchObject({
        pending: 0,
        inflight: 0,
        sessions: 0,
      });
      const badFilter = await get(`${gateway.url}/admin/audit?since=soon`);
      expect(badFilter.status).toBe(400);
      expect(badFilter.body.error.message).toContain('since: expected a duration like 1h or an ISO date');
      expect((await get(`${gateway.url}/admin/audit?since=1h`)).body.items).toHaveLength(1);
      const openapi = await get(`${gateway.url}/openapi.json`);
      expect(Object.keys(openapi.body.paths)).toEqual(
        expect.arrayContaining(['/v1/messages', '/v1/messages/{id}', '/admin/audit']),
      );
      expect((await get(`${gateway.url}/docs`)).status).toBe(200);
    });

    it('requires the admin token when one is set, and never logs it', async () => {
      const gateway = await serveYaml('admin: { token: "${ADMIN_TOKEN}" }\n', {
        cleanup,
        env: { ADMIN_TOKEN: 's3cret' },
      });
      expect((await get(`${gateway.url}/admin/queues`)).status).toBe(401);
      expect((await get(`${gateway.url}/admin/queues`, { authorization: 'Bearer wrong' })).status).toBe(401);
      expect((await get(`${gateway.url}/admin/queues`, { authorization: 'Bearer s3cret' })).status).toBe(200);
      // The token never reaches the log.
      expect(JSON.stringify(gateway.logs)).not.toContain('s3cret');
    });
  });
});
