import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakePipeline, startFakePipeline } from './fake-pipeline.js';
import { eventually, get, post, runCli, serveYaml, useCleanups } from './serve-process.js';

const cleanup = useCleanups();

/** Sends `text` on a bare socket (for what fetch refuses to send); resolves all the server wrote. */
async function exchangeRaw(base: string, text: string): Promise<{ status: number; body: unknown }> {
  const { hostname, port } = new URL(base);
  const socket = connect(Number(port), hostname);
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  socket.on('error', () => {});
  socket.end(text);
  await new Promise((resolve) => socket.once('close', resolve));
  const [head = '', body = ''] = received.split('\r\n\r\n');
  return { status: Number(head.split(' ')[1]), body: JSON.parse(body) };
}

/** A keep-alive connection on a bare socket that asks `GET /healthz` and counts the 200s. */
async function keepAliveConnection(base: string) {
  const { hostname, port } = new URL(base);
  const socket = connect(Number(port), hostname);
  let received = '';
  let closed = false;
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  socket.on('error', () => {});
  socket.on('close', () => (closed = true));
  await new Promise((resolve) => socket.once('connect', resolve));
  const answered = () => received.split('HTTP/1.1 200 ').length - 1;
  return {
    socket,
    isClosed: () => closed,
    received: () => received,
    /** Asks once more; resolves true once answered 200, false if the connection closed first. */
    async ask(): Promise<boolean> {
      const before = answered();
      socket.write('GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n');
      await eventually(() => closed || answered() > before);
      return answered() > before;
    },
  };
}

const serve = (yaml: string, server?: string) => serveYaml(yaml, { cleanup, server });

describe('switchboard serve (end to end)', () => {
  describe('when a rule routes a message to __discard__', () => {
    it('answers discarded and shows it in GET /admin/audit and `switchboard audit`', async () => {
      const gateway = await serve(`
pipelines: [{ id: echo, type: echo }]
routing:
  default: echo
  rules:
    - { name: drop-ads, type: message_content, operator: contains, value: "buy now", pipeline: __discard__ }
`);
      const echoed = await post(`${gateway.url}/v1/messages`, {
        session_id: 's1',
        user_id: 'u1',
        text: 'hello',
      });
      expect(echoed.status).toBe(200);
      expect(echoed.body).toMatchObject({
        status: 'completed',
        pipeline: 'echo',
        replies: [{ text: 'hello' }],
      });

      const discarded = await post(`${gateway.url}/v1/messages`, {
        session_id: 's1',
        user_id: 'u1',
        text: 'buy now!!',
      });
      expect(discarded.body).toMatchObject({ status: 'discarded', rule: 'drop-ads' });

      const audit = await get(`${gateway.url}/admin/audit?outcome=discarded`);
      expect(audit.status).toBe(200);
      expect(audit.body.items).toHaveLength(1);
      expect(audit.body.items[0]).toMatchObject({
        outcome: 'discarded',
        rule: 'drop-ads',
        channel: 'api',
        session: 'openapi:api:person:s1',
        chat_id: 's1',
        sender_id: 'u1',
        text: 'buy now!!',
        message_id: discarded.body?.id,
      });

      const cli = await runCli(['audit', '-c', gateway.configPath, '--rule', 'drop-ads'], {
        cwd: gateway.dir,
      });
      expect(cli.code).toBe(0);
      const row = cli.stdout.split('\n').find((line) => line.includes('drop-ads'));
      expect(row).toContain('discarded');
      expect(row).toContain('openapi:api:person:s1');
      expect(row).toContain('buy now!!');
      const json = await runCli(['audit', '-c', gateway.configPath, '--outcome', 'discarded', '--json'], {
        cwd: gateway.dir,
      });
      expect(JSON.parse(json.stdout).items[0]).toMatchObject({
        rule: 'drop-ads',
        channel: 'api',
        text: 'buy now!!',
      });
    });
  });

  describe('when an http pipeline is busy and concurrency.pipeline is 2', () => {
    let backend: FakePipeline;
    beforeAll(async () => {
      backend = await startFakePipeline();
    });
    afterAll(() => backend.close());

    it('runs at most 2 turns at once, each session in arrival order, and answers all 15', async () => {
      // The backend holds its answers until every message is queued, so that the limit, not
      // timing, decides how many turns run at once.
      let open: () => void = () => {};
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      backend.respond = async (request) => {
        await gate;
        return { status: 200, body: { replies: [{ text: `echo: ${request.text}` }] } };
      };
      const gateway = await serve(`
concurrency: { pipeline: 2 }
pipelines: [{ id: bot, type: http, url: "${backend.url}" }]
routing: { default: bot }
`);
      const sessions = ['a', 'b', 'c'];
      const ids = (
        await Promise.all(
          sessions.map(async (session) => {
            const sessionIds: string[] = [];
            // One after the other: each is journaled (202) before the next is sent, so the
            // arrival order within a session is the order of the awaits.
            for (const n of [1, 2, 3, 4, 5]) {
              const queued = await post(`${gateway.url}/v1/messages`, {
                session_id: session,
                user_id: 'u',
                text: `${session}${n}`,
                wait: false,
              });
              expect(queued.status).toBe(202);
              sessionIds.push(String(queued.body?.id));
            }
            return sessionIds;
          }),
        )
      ).flat();
      await eventually(() => backend.requests.length === 2);
      open();

      const statuses = await eventually(async () => {
        const answers = await Promise.all(ids.map((id) => get(`${gateway.url}/v1/messages/${id}`)));
        return (
          answers.every(
            (answer) => answer.body.status === 'completed' && answer.body.delivery === 'delivered',
          ) && answers
        );
      }, 30_000);
      expect(statuses.map((answer) => answer.body.replies[0].text).sort()).toEqual(
        sessions.flatMap((s) => [1, 2, 3, 4, 5].map((n) => `echo: ${s}${n}`)).sort(),
      );
      expect(backend.maxConcurrent).toBe(2);
      for (const session of sessions) {
        const order = backend.requests.filter((r) => r.session.chat_id === session).map((r) => r.text);
        expect(order).toEqual([1, 2, 3, 4, 5].map((n) => `${session}${n}`));
      }
    });
  });

  describe('when more connections are opened than server.max_connections', () => {
    it('closes a new connection as soon as it is accepted, while those open are still served', async () => {
      const gateway = await serve('', 'host: 127.0.0.1, port: 0, max_connections: 2');
      const open = [await keepAliveConnection(gateway.url), await keepAliveConnection(gateway.url)];
      // Answered: the server has accepted both, so they count toward the cap.
      for (const connection of open) expect(await connection.ask()).toBe(true);

      const extra = await keepAliveConnection(gateway.url);
      expect(await extra.ask()).toBe(false);
      expect(extra.received()).toBe('');

      for (const connection of open) expect(await connection.ask()).toBe(true);
      // A place freed is taken again.
      open[0]?.socket.destroy();
      await eventually(async () => (await keepAliveConnection(gateway.url)).ask());
      open[1]?.socket.destroy();
    });
  });

  describe('when debounce is enabled', () => {
    it('sends a burst of max_messages (3) to the pipeline as one request a\\nb\\nc and answers each with that turn', async () => {
      const backend = await startFakePipeline();
      try {
        // A long delay: the burst becomes runnable by its count, whatever the gaps between messages.
        const gateway = await serve(`
pipelines:
  - { id: bot, type: http, url: "${backend.url}", aggregation: { enabled: true, delay: 10s, max_messages: 3 } }
routing: { default: bot }
`);
        const ids: string[] = [];
        for (const text of ['a', 'b', 'c']) {
          const queued = await post(`${gateway.url}/v1/messages`, {
            session_id: 'burst',
            user_id: 'u',
            text,
            wait: false,
          });
          expect(queued.status).toBe(202);
          ids.push(String(queued.body?.id));
        }
        const answers = await eventually(async () => {
          const all = await Promise.all(ids.map((id) => get(`${gateway.url}/v1/messages/${id}`)));
          // Completed with its replies sent: a status says `delivery: pending` while they wait.
          return (
            all.every(
              (answer) => answer.body.status === 'completed' && answer.body.delivery === 'delivered',
            ) && all
          );
        });
        expect(backend.requests.map((r) => r.text)).toEqual(['a\nb\nc']);
        expect(backend.requests[0]?.messages.map((m) => m.text)).toEqual(['a', 'b', 'c']);
        expect(new Set(answers.map((answer) => answer.body.turn)).size).toBe(1);
        expect(answers.map((answer) => answer.body.replies)).toEqual(
          Array(3).fill([{ text: 'echo: a\nb\nc' }]),
        );
      } finally {
        await backend.close();
      }
    });
  });

  describe('when requests are malformed or unauthenticated', () => {
    it('answers 400/401/413 with a JSON error naming the field', async () => {
      const gateway = await serve(
        'channels: [{ id: api, type: openapi, api_keys: [secret-key] }]',
        'host: 127.0.0.1, port: 0, body_limit: 4096',
      );
      const url = `${gateway.url}/v1/messages`;
      const auth = { authorization: 'Bearer secret-key' };
      const ok = { session_id: 's', user_id: 'u', text: 'hi' };

      const missingKey = await post(url, ok);
      expect(missingKey.status).toBe(401);
      expect(missingKey.body?.error.code).toBe('SB_HTTP_UNAUTHORIZED');
      expect((await post(url, ok, { authorization: 'Bearer wrong' })).status).toBe(401);

      const malformed = await post(url, '{"session_id": ', auth);
      expect(malformed.status).toBe(400);
      expect(malformed.body?.error.message).toMatch(/body/);

      const wrongType = await post(url, { ...ok, text: 42 }, auth);
      expect(wrongType.status).toBe(400);
      expect(wrongType.body?.error.message).toMatch(/text/);

      const missing = await post(url, { session_id: 's', text: 'hi' }, auth);
      expect(missing.status).toBe(400);
      expect(missing.body?.error.message).toMatch(/user_id/);

      const unknown = await post(url, { ...ok, colour: 'blue' }, auth);
      expect(unknown.status).toBe(400);
      expect(unknown.body?.error.message).toMatch(/colour/);

      const oversized = await post(url, { ...ok, text: 'x'.repeat(20_000) }, auth);
      expect(oversized.status).toBe(413);
      expect(oversized.body?.error.code).toBe('SB_HTTP_PAYLOAD_TOO_LARGE');

      expect((await post(url, ok, auth)).body).toMatchObject({
        status: 'completed',
        replies: [{ text: 'hi' }],
      });
    });
  });

  describe('when a request matches no route or breaks HTTP itself', () => {
    it('answers 404, a bad percent-encoding, a bad request line and oversized headers in the one error shape', async () => {
      const gateway = await serve('channels: [{ id: api, type: openapi, api_keys: [secret-key] }]');

      const unknown = await get(`${gateway.url}/slack`);
      expect(unknown.status).toBe(404);
      expect(unknown.body).toEqual({ error: { code: 'SB_HTTP_NOT_FOUND', message: 'no route GET /slack' } });
      const wrongMethod = await exchangeRaw(gateway.url, 'OPTIONS /healthz HTTP/1.1\r\nHost: t\r\n\r\n');
      expect(wrongMethod).toEqual({
        status: 404,
        body: { error: { code: 'SB_HTTP_NOT_FOUND', message: 'no route OPTIONS /healthz' } },
      });

      const badUrl = await get(`${gateway.url}/v1/messages/%ED%A0%80`, {
        authorization: 'Bearer secret-key',
      });
      expect(badUrl.status).toBe(400);
      expect(badUrl.body?.error.code).toBe('SB_HTTP_BAD_REQUEST');

      const badLine = await exchangeRaw(gateway.url, 'GET /healthz HTTP/9\r\n\r\n');
      expect(badLine).toEqual({
        status: 400,
        body: { error: { code: 'SB_HTTP_BAD_REQUEST', message: 'malformed HTTP request' } },
      });
      const bigHeaders = await exchangeRaw(
        gateway.url,
        `GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: ${'x'.repeat(20_000)}\r\n\r\n`,
      );
      expect(bigHeaders).toEqual({
        status: 431,
        body: { error: { code: 'SB_HTTP_BAD_REQUEST', message: 'headers: larger than the server accepts' } },
      });
    });
  });
});
