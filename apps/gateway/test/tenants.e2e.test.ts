import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { metricValue, scrapeMetrics } from '@switchboard/testkit/prometheus';
import { startFakePipeline, startGatedPipeline } from './fake-pipeline.js';
import { eventually, get, post, runCli, type ServeProcess, serveYaml, testConfig } from './serve-process.js';

// Tenants against the real `switchboard serve`: each tenant's channels route by its own routing
// only, and every audit record names the tenant whose channel received the message.

// The default tenant discards "hello"; acme's routing has no such rule, so the same text sent
// through acme's channel shows whose rules applied.
const CONFIG = `
channels: [ { id: api, type: openapi } ]
pipelines: [ { id: echo, type: echo } ]
routing:
  default: echo
  rules:
    - { name: no-hello, type: message_content, operator: contains, value: hello, pipeline: __discard__ }
tenants:
  - id: acme
    channels: [ { id: acme-api, type: openapi, prefix: /acme } ]
    pipelines: [ { id: acme-echo, type: echo } ]
    routing:
      default: acme-echo
      rules:
        - { name: acme-spam, type: message_content, operator: contains, value: spam, pipeline: __discard__ }
`;

const say = (gateway: ServeProcess, prefix: string, text: string) =>
  post(`${gateway.url}${prefix}/messages`, { session_id: 's1', user_id: 'u1', text });

describe('tenants (end to end)', () => {
  // One gateway for the file: the audit tests read what the routing tests sent.
  let gateway: ServeProcess;
  beforeAll(async () => {
    gateway = await serveYaml(CONFIG);
  });
  afterAll(() => gateway.stop('SIGKILL'));

  describe('when a message arrives through a tenant’s channel', () => {
    it('is routed by that tenant’s routing, to its pipelines only', async () => {
      const acme = await say(gateway, '/acme', 'hello');
      expect(acme.body).toMatchObject({
        status: 'completed',
        pipeline: 'acme-echo',
        replies: [{ text: 'hello' }],
      });
      const spam = await say(gateway, '/acme', 'spam offer');
      expect(spam.body).toMatchObject({ status: 'discarded', rule: 'acme-spam' });

      // The default tenant's channel keeps the top-level routing.
      expect((await say(gateway, '/v1', 'hello')).body).toMatchObject({
        status: 'discarded',
        rule: 'no-hello',
      });
      expect((await say(gateway, '/v1', 'spam offer')).body).toMatchObject({
        status: 'completed',
        pipeline: 'echo',
      });
    });

    it('shows each tenant’s routing and hits in GET /admin/routing', async () => {
      const routing = await get(`${gateway.url}/admin/routing`);
      expect(routing.status).toBe(200);
      expect(routing.body?.rules.map((rule: { name: string }) => rule.name)).toEqual(['no-hello']);
      expect(routing.body?.tenants).toEqual([
        expect.objectContaining({
          id: 'acme',
          rules: [expect.objectContaining({ name: 'acme-spam' })],
          default: { pipeline: 'acme-echo', hits: expect.any(Number) },
        }),
      ]);
    });
  });

  describe('when /metrics is scraped', () => {
    it('labels outcomes and queue waits with the tenant of the message', async () => {
      await say(gateway, '/acme', 'count me');
      const text = await scrapeMetrics(gateway.url);
      expect(
        metricValue(text, 'switchboard_messages_total{channel="acme-api",outcome="completed",tenant="acme"}'),
      ).toBeGreaterThan(0);
      expect(metricValue(text, 'switchboard_messages_total{channel="acme-api",tenant="default"}')).toBe(0);
      expect(metricValue(text, 'switchboard_messages_total{channel="api",tenant="default"}')).toBeGreaterThan(
        0,
      );
      expect(metricValue(text, 'switchboard_queue_wait_seconds_count{tenant="acme"}')).toBeGreaterThan(0);
      expect(metricValue(text, 'switchboard_queue_wait_seconds_count{tenant="default"}')).toBeGreaterThan(0);
    });
  });

  describe('when the audit log is read', () => {
    it('names the tenant of every record and filters by it, in the API and the CLI', async () => {
      await say(gateway, '/acme', 'more spam');
      await say(gateway, '/v1', 'hello again');
      const all = await get(`${gateway.url}/admin/audit?outcome=discarded`);
      const tenants = all.body?.items.map((item: { channel: string; tenant: string }) => [
        item.channel,
        item.tenant,
      ]);
      expect(new Set(tenants.map(String))).toEqual(new Set(['acme-api,acme', 'api,default']));

      const acme = await get(`${gateway.url}/admin/audit?tenant=acme`);
      expect(acme.body?.items.length).toBeGreaterThan(0);
      expect(
        acme.body?.items.every((item: { tenant: string; channel: string }) => item.channel === 'acme-api'),
      ).toBe(true);

      const cli = await runCli(['audit', '-c', gateway.configPath, '--tenant', 'acme', '--json'], {
        cwd: gateway.dir,
      });
      expect(cli.code).toBe(0);
      const items = JSON.parse(cli.stdout).items as { tenant: string; text: string }[];
      expect(items.map((item) => item.text).sort()).toEqual(['more spam', 'spam offer']);
      expect(items.every((item) => item.tenant === 'acme')).toBe(true);
    });
  });

  describe('when a reload adds a tenant', () => {
    it('serves its channel and routes it by its routing', async () => {
      const base = 'pipelines: [ { id: echo, type: echo } ]\nrouting: { default: echo }\n';
      const reloaded = await serveYaml(base);
      try {
        expect((await say(reloaded, '/acme', 'hi')).status).toBe(404);
        writeFileSync(
          reloaded.configPath,
          testConfig(
            reloaded.dir,
            `${base}tenants:\n  - id: acme\n    channels: [ { id: acme-api, type: openapi, prefix: /acme } ]\n` +
              '    pipelines: [ { id: acme-echo, type: echo } ]\n    routing: { default: acme-echo }\n',
          ),
        );
        const reload = await post(`${reloaded.url}/admin/reload`, {});
        expect(reload.status).toBe(200);
        expect(reload.body?.changed).toEqual(
          expect.arrayContaining([
            'channels.acme-api: added',
            'pipelines.acme-echo: added',
            'tenants.acme: added',
          ]),
        );
        expect((await say(reloaded, '/acme', 'hi')).body).toMatchObject({
          status: 'completed',
          pipeline: 'acme-echo',
        });
      } finally {
        await reloaded.stop('SIGKILL');
      }
    });
  });

  describe('when a reload adds a tenant and removes another while a turn runs', () => {
    it('lets the running turn end once, answered, and serves the added tenant, not the removed one', async () => {
      const backend = await startGatedPipeline();
      const { release } = backend;
      const tenant = (id: string, pipeline: string) =>
        `  - id: ${id}\n    channels: [ { id: ${id}-api, type: openapi, prefix: /${id} } ]\n` +
        `    pipelines: [ ${pipeline} ]\n    routing: { default: ${id}-bot }\n`;
      const base = 'pipelines: [ { id: echo, type: echo } ]\nrouting: { default: echo }\ntenants:\n';
      const acme = tenant('acme', `{ id: acme-bot, type: http, url: "${backend.url}" }`);
      const running = await serveYaml(`${base}${acme}${tenant('beta', '{ id: beta-bot, type: echo }')}`);
      try {
        const accepted = await post(`${running.url}/acme/messages`, {
          session_id: 's1',
          user_id: 'u1',
          text: 'slow',
          wait: false,
        });
        expect(accepted.status).toBe(202);
        await eventually(() => backend.requests.length === 1, 10_000, 'acme’s turn at the backend');

        writeFileSync(
          running.configPath,
          testConfig(running.dir, `${base}${acme}${tenant('gamma', '{ id: gamma-bot, type: echo }')}`),
        );
        const reload = await post(`${running.url}/admin/reload`, {});
        expect(reload.status).toBe(200);
        expect(reload.body?.changed).toEqual(
          expect.arrayContaining(['tenants.beta: removed', 'tenants.gamma: added']),
        );
        expect((await say(running, '/beta', 'hi')).status).toBe(404);
        expect((await say(running, '/gamma', 'hi')).body).toMatchObject({
          status: 'completed',
          pipeline: 'gamma-bot',
        });
        // Acme's turn was left running through the reload: it ends once, with its answer.
        const status = await get(`${running.url}/acme/messages/${accepted.body?.id}`);
        expect(status.body?.status).toBe('running');
        release();
        const done = await eventually(async () => {
          const current = await get(`${running.url}/acme/messages/${accepted.body?.id}`);
          return current.body?.status === 'completed' && current.body;
        });
        expect(done).toMatchObject({ pipeline: 'acme-bot', replies: [{ text: 'done: slow' }] });
        expect(backend.requests).toHaveLength(1);
        const path = await get(`${running.url}/admin/messages/${accepted.body?.id}`);
        expect(path.body?.turns).toEqual([
          expect.objectContaining({ pipeline: 'acme-bot', attempt: 1, result: 'completed' }),
        ]);
      } finally {
        release();
        await running.stop('SIGKILL');
        await backend.close();
      }
    });
  });

  describe('when a tenant’s dead letter is replayed after its pipeline was removed', () => {
    it('is routed again by its tenant’s routing, not the default tenant’s', async () => {
      const backend = await startFakePipeline();
      backend.respond = async () => ({ status: 503, body: { error: 'down' } });
      const base = 'pipelines: [ { id: echo, type: echo } ]\nrouting: { default: echo }\n';
      const acme = (pipelines: string, target: string) =>
        `${base}tenants:\n  - id: acme\n    channels: [ { id: acme-api, type: openapi, prefix: /acme } ]\n` +
        `    pipelines: [ ${pipelines} ]\n    routing: { default: ${target} }\n`;
      const failing = await serveYaml(
        acme(`{ id: acme-bot, type: http, url: "${backend.url}", retry: { max_attempts: 1 } }`, 'acme-bot'),
      );
      try {
        const answer = await say(failing, '/acme', 'help');
        expect(answer.body).toMatchObject({ status: 'dead_lettered', pipeline: 'acme-bot' });
        const deadLetters = await get(`${failing.url}/admin/dead-letters`);
        expect(deadLetters.body?.items[0]).toMatchObject({ tenant: 'acme', channel: 'acme-api' });

        writeFileSync(
          failing.configPath,
          testConfig(failing.dir, acme('{ id: acme-echo, type: echo }', 'acme-echo')),
        );
        expect((await post(`${failing.url}/admin/reload`, {})).status).toBe(200);
        const replay = await post(
          `${failing.url}/admin/dead-letters/${deadLetters.body?.items[0].id}/replay`,
          {},
        );
        expect(replay.status).toBe(202);
        const status = await eventually(async () => {
          const current = await get(`${failing.url}/acme/messages/${answer.body?.id}`);
          return current.body?.status === 'completed' && current.body;
        });
        expect(status).toMatchObject({ pipeline: 'acme-echo', replies: [{ text: 'help' }] });
      } finally {
        await failing.stop('SIGKILL');
        await backend.close();
      }
    });
  });

  describe('when a tenant has a concurrency and a max_pending of its own', () => {
    it('runs no more of its turns at once, refuses its excess with 429, and leaves the rest to others', async () => {
      const backend = await startGatedPipeline();
      const { release } = backend;
      const capped = await serveYaml(
        'pipelines: [ { id: echo, type: echo } ]\nrouting: { default: echo }\n' +
          'tenants:\n  - id: acme\n    concurrency: 2\n    max_pending: 3\n' +
          '    channels: [ { id: acme-api, type: openapi, prefix: /acme } ]\n' +
          `    pipelines: [ { id: acme-bot, type: http, url: "${backend.url}" } ]\n` +
          '    routing: { default: acme-bot }\n',
      );
      try {
        const send = (session: string) =>
          post(`${capped.url}/acme/messages`, {
            session_id: session,
            user_id: 'u1',
            text: session,
            wait: false,
          });
        const accepted = [];
        for (let i = 0; i < 5; i++) accepted.push(await send(`s${i}`));
        expect(accepted.map((answer) => answer.status)).toEqual([202, 202, 202, 202, 202]);
        await eventually(() => backend.requests.length === 2, 10_000, 'two turns at the backend');
        // Two run, three wait: the tenant's next message is refused, the default tenant's is not.
        const refused = await send('s5');
        expect(refused.status).toBe(429);
        expect(refused.body?.error?.code).toBe('SB_QUEUE_FULL');
        expect((await say(capped, '/v1', 'still served')).body).toMatchObject({ status: 'completed' });
        expect(backend.requests).toHaveLength(2);

        release();
        await eventually(() => backend.requests.length === 5, 10_000, 'every accepted turn at the backend');
        expect(backend.maxConcurrent).toBe(2);
      } finally {
        release();
        await capped.stop('SIGKILL');
        await backend.close();
      }
    });
  });
});
