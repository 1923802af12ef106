import { afterEach, describe, expect, it } from 'vitest';
import { type Harness, createHarness } from './harness.js';

/** Inputs that once got a 500, a 414 outside the one error shape, or no answer at all. */
describe('channelRoutes on bad input', () => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });

  const post = (payload: string) =>
    h.server.inject({
      method: 'POST',
      url: '/v1/messages',
      payload,
      headers: { 'content-type': 'application/json' },
    });

  describe('when session_id holds an unpaired surrogate', () => {
    it('answers 400 naming body.session_id, and accepts nothing', async () => {
      h = await createHarness();
      const response = await post('{"session_id":"\\ud800","user_id":"u1","text":"hi"}');
      expect(response.statusCode).toBe(400);
      expect(response.json().error).toMatchObject({
        code: 'SB_HTTP_BAD_REQUEST',
        details: { problems: ['body.session_id: must not contain an unpaired UTF-16 surrogate'] },
      });
      expect(h.outcomes).toEqual([]);
    });
  });

  describe('when the body holds a __proto__ or constructor.prototype key', () => {
    it('answers 400 naming the key where it is, not "malformed JSON", and accepts nothing', async () => {
      h = await createHarness();
      const cases: Array<[string, string]> = [
        ['{"session_id":"s1","user_id":"u1","text":"hi","__proto__":{"x":1}}', 'body.__proto__'],
        ['{"session_id":"s1","user_id":"u1","text":"hi","\\u005f_proto__":1}', 'body.__proto__'],
        [
          '{"session_id":"s1","user_id":"u1","text":[{"constructor":{"prototype":{}}}]}',
          'body.text[0].constructor.prototype',
        ],
      ];
      for (const [payload, path] of cases) {
        const response = await post(payload);
        expect(response.statusCode).toBe(400);
        expect(response.json().error).toEqual({
          code: 'SB_HTTP_BAD_REQUEST',
          message: `${path}: key not allowed (it could change an object's prototype)`,
          details: { path },
        });
      }
      expect(h.outcomes).toEqual([]);
    });

    it('still answers malformed JSON and an empty body as before', async () => {
      h = await createHarness();
      expect((await post('{"session_id":')).json().error.message).toBe('body: malformed JSON');
      expect((await post('')).json().error.message).toMatch(/^body: empty/);
    });
  });

  describe('when the session id is longer than 100 characters (fastify’s default path limit)', () => {
    it('streams the events of a session that POST accepts, up to 256 characters of it', async () => {
      h = await createHarness();
      const sessionId = 'é'.repeat(256);
      const accepted = await post(JSON.stringify({ session_id: sessionId, user_id: 'u1', text: 'hi' }));
      expect(accepted.statusCode).toBe(200);
      const base = await h.server.listen({ host: '127.0.0.1', port: 0 });
      const abort = new AbortController();
      const stream = await fetch(`${base}/v1/sessions/${encodeURIComponent(sessionId)}/events`, {
        signal: abort.signal,
      });
      expect(stream.status).toBe(200);
      expect(stream.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      abort.abort();
    });

    it('answers a longer one 400 naming params.session_id, and an over-long path in the one error shape', async () => {
      h = await createHarness();
      const tooLong = await h.server.inject({ method: 'GET', url: `/v1/sessions/${'s'.repeat(257)}/events` });
      expect(tooLong.statusCode).toBe(400);
      expect(tooLong.json().error.message).toContain('params.session_id: Too big');

      const huge = await h.server.inject({ method: 'GET', url: `/v1/sessions/${'s'.repeat(5000)}/events` });
      expect(huge.statusCode).toBe(414);
      expect(Object.keys(huge.json())).toEqual(['error']);
      expect(huge.json().error.code).toBe('SB_HTTP_BAD_REQUEST');
    });
  });

  describe('when a path holds a bad percent-encoding', () => {
    it('answers 400 in the one error shape', async () => {
      h = await createHarness();
      const response = await h.server.inject({ method: 'GET', url: '/v1/sessions/%ED%A0%80/events' });
      expect(response.statusCode).toBe(400);
      expect(Object.keys(response.json())).toEqual(['error']);
      expect(response.json().error.code).toBe('SB_HTTP_BAD_REQUEST');
    });
  });

  describe('when the event stream is asked for with HEAD', () => {
    it('answers at once with the headers of a stream, over real HTTP', async () => {
      h = await createHarness();
      const base = await h.server.listen({ host: '127.0.0.1', port: 0 });
      const response = await fetch(`${base}/v1/sessions/s1/events`, {
        method: 'HEAD',
        signal: AbortSignal.timeout(5000),
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      // The close would wait for a HEAD left open; it no longer has to.
      await h.server.close();
    });
  });
});
