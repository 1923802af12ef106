import { afterEach, describe, expect, it } from 'vitest';
import { type Harness, createGatedPipeline, createHarness, eventually } from './harness.js';
import { connectRaw, postHead } from './raw-client.js';

const BODY = JSON.stringify({ session_id: 's1', user_id: 'u1', text: 'hello' });

/** The status code and the parsed JSON body of a raw HTTP/1.1 answer. */
function parseAnswer(raw: string): { status: number; headers: string; body: unknown } {
  const [head = '', body = ''] = raw.split('\r\n\r\n');
  return { status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body: JSON.parse(body) };
}

describe('the HTTP server (httpServerOptions, createHttpServerShutdown)', () => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });

  describe('when a client sends its body slower than server.request_timeout', () => {
    it('answers 408 SB_HTTP_REQUEST_TIMEOUT in the one error shape and closes the connection', async () => {
      h = await createHarness({ server: { request_timeout: '1s' } });
      const base = await h.server.listen({ host: '127.0.0.1', port: 0 });
      const client = await connectRaw(base);
      await client.write(`${postHead('/v1/messages', BODY.length)}${BODY.slice(0, 10)}`);

      const answer = parseAnswer(await client.closed);
      expect(answer.status).toBe(408);
      expect(answer.body).toEqual({
        error: {
          code: 'SB_HTTP_REQUEST_TIMEOUT',
          message: 'request: headers and body not received within server.request_timeout',
        },
      });
      expect(h.outcomes).toEqual([]);
    });
  });

  describe('when the server closes while a client has sent half a body', () => {
    it('cuts the connection once the close timeout has passed instead of waiting for the rest', async () => {
      h = await createHarness();
      const base = await h.server.listen({ host: '127.0.0.1', port: 0 });
      const client = await connectRaw(base);
      await client.write(`${postHead('/v1/messages', BODY.length)}${BODY.slice(0, 10)}`);

      // Without the cut, fastify's close waits for the body for ever (request_timeout is 30 s).
      const started = Date.now();
      await h.httpShutdown.close(200);
      expect(Date.now() - started).toBeLessThan(5000);
      await client.closed;
    });
  });

  describe('when a keep-alive connection is busy with a waiting request as the shutdown begins', () => {
    it('answers 202 at the drain with Connection: close and closes the connection, which fastify kept open', async () => {
      const slow = createGatedPipeline('slow');
      h = await createHarness({ pipelines: [{ pipeline: slow }] });
      const base = await h.server.listen({ host: '127.0.0.1', port: 0 });
      const client = await connectRaw(base);
      const body = JSON.stringify({ session_id: 's1', user_id: 'u1', text: 'slow', timeout_ms: 60_000 });
      await client.write(`${postHead('/v1/messages', body.length)}${body}`);
      await eventually(() => slow.runs.length === 1);

      h.httpShutdown.drain();
      h.channel.drain?.();
      const answer = parseAnswer(await client.closed);
      expect(answer.status).toBe(202);
      expect(answer.headers).toContain('connection: close');
      expect(answer.body).toMatchObject({ status: 'running' });
      slow.release();
    });
  });

  describe('when a client follows an event stream as the server closes', () => {
    it('ends the stream and its connection, so the close does not wait for its timeout', async () => {
      h = await createHarness();
      const base = await h.server.listen({ host: '127.0.0.1', port: 0 });
      const client = await connectRaw(base);
      await client.write('GET /v1/sessions/s1/events HTTP/1.1\r\nHost: test\r\n\r\n');
      await eventually(() => client.received().includes(': connected'));

      const started = Date.now();
      await h.httpShutdown.close(60_000);
      expect(Date.now() - started).toBeLessThan(10_000);
      // The chunked stream's last chunk: it ended, rather than being cut.
      expect(await client.closed).toMatch(/0\r\n\r\n$/);
    });
  });
});
