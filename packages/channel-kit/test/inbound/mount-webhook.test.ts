import type { IncomingHttpHeaders } from 'node:http';
import { type Logger, SwitchboardError } from '@switchboard/core';
import { postUnfinished } from '@switchboard/testkit/post-webhook';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { AUTHORIZED, type Authorization } from '../../src/inbound/authorization.js';
import { ACKNOWLEDGED, type Disposition } from '../../src/inbound/disposition.js';
import { type WebhookOptions, mountWebhook } from '../../src/inbound/mount-webhook.js';
import { parseJsonObject } from '../../src/inbound/parse-json-object.js';
import { webhookPath } from '../../src/inbound/webhook-path.js';

const PATH = webhookPath('demo', 'hook');
const SECRET = 'header-secret';

/** A logger that keeps its warnings, children included. */
function warningLogger() {
  const lines: Array<{ fields: object; message: string }> = [];
  const make = (bindings: object): Logger => ({
    debug() {},
    info() {},
    warn(fields, message) {
      lines.push({ fields: { ...bindings, ...fields }, message });
    },
    error() {},
    child(more) {
      return make({ ...bindings, ...more });
    },
  });
  return { logger: make({}), lines };
}

let server: FastifyInstance | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/**
 * A fastify server with a demo webhook: the secret in `x-demo-secret`, a signature `sig-<raw
 * body length>` in `x-demo-signature`, JSON object bodies. Counts what ran.
 */
async function setUp(
  overrides: Partial<WebhookOptions<Record<string, unknown>>> & {
    answer?: (body: Record<string, unknown>) => Disposition;
    bodyLimit?: number;
  } = {},
) {
  const { answer = () => ACKNOWLEDGED, bodyLimit, ...options } = overrides;
  const counts = { verified: 0, parsed: 0, handled: 0 };
  const handled: Array<{ body: Record<string, unknown>; headers: IncomingHttpHeaders }> = [];
  const { logger, lines } = warningLogger();
  server = Fastify(bodyLimit === undefined ? {} : { bodyLimit });
  mountWebhook<Record<string, unknown>>(server, {
    path: PATH,
    name: 'demo channel "hook"',
    logger,
    authorize: (headers) =>
      headers['x-demo-secret'] === SECRET
        ? AUTHORIZED
        : { refused: 'x-demo-secret: missing or does not match' },
    verify: ({ headers, rawBody }) => {
      counts.verified += 1;
      return headers['x-demo-signature'] === `sig-${rawBody.length}`
        ? null
        : 'x-demo-signature: bad signature';
    },
    parse: (rawBody) => {
      counts.parsed += 1;
      const parsed = parseJsonObject(rawBody);
      if (!parsed.ok) {
        throw new SwitchboardError('SB_HTTP_BAD_REQUEST', {
          message: `body: ${parsed.problem}`,
          details: { path: 'body' },
        });
      }
      return parsed.value;
    },
    handler: () => async (body, headers) => {
      counts.handled += 1;
      handled.push({ body, headers });
      return answer(body);
    },
    ...options,
  });
  await server.ready();
  return { server, counts, handled, lines };
}

function post(
  target: FastifyInstance,
  payload: string,
  options: { secret?: string; signature?: string; contentType?: string } = {},
) {
  return target.inject({
    method: 'POST',
    url: PATH,
    headers: {
      'content-type': options.contentType ?? 'application/json',
      'x-demo-secret': options.secret ?? SECRET,
      'x-demo-signature': options.signature ?? `sig-${Buffer.byteLength(payload)}`,
    },
    payload,
  });
}

describe('webhookPath', () => {
  it('is /<type>/<channel id>, the id URL-encoded', () => {
    expect(webhookPath('telegram', 'tg-1')).toBe('/telegram/tg-1');
    expect(webhookPath('demo', 'a/b c')).toBe('/demo/a%2Fb%20c');
  });
});

describe('mountWebhook', () => {
  describe('when the call is authorized, signed and well-formed', () => {
    it('hands the parsed body and headers to the handler and answers 200 with its body', async () => {
      const { server, handled } = await setUp({
        answer: (body) => ({ acknowledge: true, body: { challenge: body.challenge } }),
      });
      const answer = await post(server, '{"challenge": "c-1"}');
      expect(answer.statusCode).toBe(200);
      expect(answer.json()).toEqual({ challenge: 'c-1' });
      expect(handled).toHaveLength(1);
      expect(handled[0]?.body).toEqual({ challenge: 'c-1' });
      expect(handled[0]?.headers['x-demo-secret']).toBe(SECRET);
    });
  });

  describe('when the authorizing header is wrong or missing', () => {
    it('answers 401 naming the header before the body is read; nothing else runs', async () => {
      const { server, counts } = await setUp();
      const wrong = await post(server, '{}', { secret: 'forged' });
      expect(wrong.statusCode).toBe(401);
      expect(wrong.json()).toEqual({
        error: { code: 'SB_HTTP_UNAUTHORIZED', message: 'x-demo-secret: missing or does not match' },
      });
      const missing = await server.inject({ method: 'POST', url: PATH, payload: {} });
      expect(missing.statusCode).toBe(401);
      // A body no parser of the route accepts would be a 415 once read: the refusal came first.
      const unreadable = await post(server, 'hello', { secret: 'forged', contentType: 'text/plain' });
      expect(unreadable.statusCode).toBe(401);
      expect(counts).toEqual({ verified: 0, parsed: 0, handled: 0 });
    });
  });

  describe('when authorize checks asynchronously (a bearer token against fetched keys)', () => {
    /** A token check that takes a turn of the event loop, as a key lookup does. */
    async function tokenCheck(headers: IncomingHttpHeaders): Promise<Authorization<string>> {
      await new Promise((resolve) => setImmediate(resolve));
      const token = headers.authorization;
      return token?.startsWith('Bearer good-')
        ? { grant: token.slice('Bearer good-'.length) }
        : { refused: 'Authorization: not accepted' };
    }

    /** `tokenCheck` for a route whose body check needs nothing of the token. */
    async function tokenOnly(headers: IncomingHttpHeaders): Promise<Authorization> {
      const authorization = await tokenCheck(headers);
      return 'refused' in authorization ? authorization : AUTHORIZED;
    }

    it('answers a bad token 401 while the body is still being sent, never waiting for it', async () => {
      const { server, counts, lines } = await setUp({ authorize: tokenOnly });
      const url = await server.listen({ host: '127.0.0.1', port: 0 });
      // The client never sends the rest of its body: only an answer before the body is read can arrive.
      const answer = await postUnfinished(`${url}${PATH}`, { authorization: 'Bearer forged' });
      expect(answer).toEqual({
        status: 401,
        body: { error: { code: 'SB_HTTP_UNAUTHORIZED', message: 'Authorization: not accepted' } },
      });
      expect(counts).toEqual({ verified: 0, parsed: 0, handled: 0 });
      expect(lines).toEqual([
        {
          fields: { route: PATH, problem: 'Authorization: not accepted', suppressed: 0 },
          message: 'webhook call refused',
        },
      ]);
    });

    it('hands verify the grant of the same call, for concurrent calls alike', async () => {
      const seen: Array<{ grant: string; body: string }> = [];
      const handled: unknown[] = [];
      server = Fastify();
      mountWebhook<Record<string, unknown>, string>(server, {
        path: PATH,
        name: 'demo channel "hook"',
        logger: warningLogger().logger,
        authorize: tokenCheck,
        verify: ({ rawBody }, grant) => {
          seen.push({ grant, body: rawBody });
          return JSON.parse(rawBody).for === grant ? null : 'Authorization: issued for another body';
        },
        parse: (rawBody) => JSON.parse(rawBody),
        handler: () => async (body) => {
          handled.push(body);
          return ACKNOWLEDGED;
        },
      });
      await server.ready();
      const target = server;
      const call = (token: string, body: object) =>
        target.inject({
          method: 'POST',
          url: PATH,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          payload: JSON.stringify(body),
        });
      const answers = await Promise.all([
        call('good-a', { for: 'a' }),
        call('good-b', { for: 'b' }),
        call('good-c', { for: 'd' }),
      ]);
      expect(answers.map((answer) => answer.statusCode)).toEqual([200, 200, 401]);
      expect(answers[2]?.json().error.message).toBe('Authorization: issued for another body');
      expect(seen.sort((x, y) => x.grant.localeCompare(y.grant))).toEqual([
        { grant: 'a', body: '{"for":"a"}' },
        { grant: 'b', body: '{"for":"b"}' },
        { grant: 'c', body: '{"for":"d"}' },
      ]);
      expect(handled).toHaveLength(2);
      expect(handled).toEqual(expect.arrayContaining([{ for: 'a' }, { for: 'b' }]));
    });

    it('answers 503 with Retry-After when the keys cannot be fetched, before the body is read', async () => {
      const { server, counts, lines } = await setUp({
        authorize: async () => {
          throw new SwitchboardError('SB_CHANNEL_UNREACHABLE', {
            message: 'signing keys could not be fetched from http://keys.invalid',
            retryable: true,
            retryAfterMs: 12_500,
          });
        },
      });
      const url = await server.listen({ host: '127.0.0.1', port: 0 });
      for (let i = 0; i < 3; i += 1) {
        const answer = await postUnfinished(`${url}${PATH}`, { authorization: 'Bearer good-a' });
        expect(answer).toEqual({
          status: 503,
          body: {
            error: {
              code: 'SB_CHANNEL_UNREACHABLE',
              message: 'signing keys could not be fetched from http://keys.invalid',
            },
          },
        });
      }
      const headers = await server.inject({ method: 'POST', url: PATH, payload: {} });
      expect(headers.headers['retry-after']).toBe('13');
      expect(counts).toEqual({ verified: 0, parsed: 0, handled: 0 });
      expect(lines).toHaveLength(1);
      expect(lines[0]?.fields).toMatchObject({
        problem: 'signing keys could not be fetched from http://keys.invalid',
      });
    });

    it('leaves any other error it throws to the server’s error handler', async () => {
      const { server, counts } = await setUp({
        authorize: async () => {
          throw new TypeError('a bug in the check');
        },
      });
      expect((await post(server, '{}')).statusCode).toBe(500);
      expect(counts).toEqual({ verified: 0, parsed: 0, handled: 0 });
    });
  });

  describe('when the signature over the raw body is forged or missing', () => {
    it('answers 401 naming the header; the body is never parsed nor handled', async () => {
      const { server, counts } = await setUp();
      const forged = await post(server, '{"a": 1}', { signature: 'sig-1' });
      expect(forged.statusCode).toBe(401);
      expect(forged.json().error).toEqual({
        code: 'SB_HTTP_UNAUTHORIZED',
        message: 'x-demo-signature: bad signature',
      });
      const unsigned = await server.inject({
        method: 'POST',
        url: PATH,
        headers: { 'content-type': 'application/json', 'x-demo-secret': SECRET },
        payload: '{}',
      });
      expect(unsigned.statusCode).toBe(401);
      // Even a body that is not JSON is refused for its signature, not parsed.
      expect((await post(server, '{"a": ', { signature: 'sig-0' })).statusCode).toBe(401);
      expect(counts).toEqual({ verified: 3, parsed: 0, handled: 0 });
    });

    it('waits for an asynchronous check (keys fetched) before parsing', async () => {
      const { server, counts } = await setUp({
        verify: async ({ headers }) => {
          await new Promise((resolve) => setImmediate(resolve));
          return headers['x-demo-signature'] === 'sig-async' ? null : 'authorization: not accepted';
        },
      });
      const refused = await post(server, '{"a": ', { signature: 'sig-0' });
      expect(refused.statusCode).toBe(401);
      expect(refused.json().error.message).toBe('authorization: not accepted');
      expect((await post(server, '{"a": 1}', { signature: 'sig-async' })).statusCode).toBe(200);
      expect(counts).toEqual({ verified: 0, parsed: 1, handled: 1 });
    });

    it('answers 503 with Retry-After when the check cannot be made now, warning once per interval', async () => {
      const { server, counts, lines } = await setUp({
        verify: async () => {
          throw new SwitchboardError('SB_CHANNEL_UNREACHABLE', {
            message: 'signing keys could not be fetched from http://keys.invalid',
            retryable: true,
            retryAfterMs: 20_000,
          });
        },
      });
      for (let i = 0; i < 5; i += 1) {
        const answer = await post(server, '{"a": 1}');
        expect(answer.statusCode).toBe(503);
        expect(answer.headers['retry-after']).toBe('20');
        expect(answer.json().error).toEqual({
          code: 'SB_CHANNEL_UNREACHABLE',
          message: 'signing keys could not be fetched from http://keys.invalid',
        });
      }
      expect(counts).toEqual({ verified: 0, parsed: 0, handled: 0 });
      expect(lines).toEqual([
        {
          fields: {
            route: PATH,
            problem: 'signing keys could not be fetched from http://keys.invalid',
            suppressed: 0,
          },
          message: 'webhook call refused',
        },
      ]);
    });

    it('verifies the bytes as sent, whitespace included', async () => {
      const { server, handled } = await setUp();
      const raw = '{ "a" :  1 }\n';
      expect((await post(server, raw)).statusCode).toBe(200);
      expect((await post(server, raw, { signature: 'sig-8' })).statusCode).toBe(401);
      expect(handled).toHaveLength(1);
    });
  });

  describe('when forged calls come in a flood', () => {
    it('logs one warning per minute for the route', async () => {
      let nowMs = 5_000_000;
      const { server, lines } = await setUp({ now: () => nowMs });
      for (let i = 0; i < 20; i += 1) {
        await post(server, '{}', { secret: i % 2 === 0 ? 'forged' : SECRET, signature: 'sig-x' });
      }
      expect(lines).toEqual([
        {
          fields: { route: PATH, problem: 'x-demo-secret: missing or does not match', suppressed: 0 },
          message: 'webhook call refused',
        },
      ]);
      nowMs += 60_000;
      await post(server, '{}', { signature: 'sig-x' });
      expect(lines).toHaveLength(2);
      expect(lines[1]?.fields).toEqual({
        route: PATH,
        problem: 'x-demo-signature: bad signature',
        suppressed: 19,
      });
    });
  });

  describe('when the channel is not running', () => {
    it('answers 503 SB_DRAINING with Retry-After, for authentic calls only', async () => {
      const { server } = await setUp({ handler: () => null });
      const answer = await post(server, '{}');
      expect(answer.statusCode).toBe(503);
      expect(answer.headers['retry-after']).toBe('1');
      expect(answer.json().error).toEqual({
        code: 'SB_DRAINING',
        message: 'demo channel "hook" is not running',
      });
      expect((await post(server, '{}', { signature: 'sig-x' })).statusCode).toBe(401);
    });
  });

  describe('when the handler asks for redelivery', () => {
    it('answers 503 with its code and Retry-After in whole seconds, rounded up', async () => {
      const { server } = await setUp({
        answer: () => ({
          acknowledge: false,
          code: 'SB_QUEUE_FULL',
          message: 'the gateway cannot take it now (queue_full); deliver it again later',
          retryAfterMs: 2_500,
        }),
      });
      const answer = await post(server, '{}');
      expect(answer.statusCode).toBe(503);
      expect(answer.headers['retry-after']).toBe('3');
      expect(answer.json().error.code).toBe('SB_QUEUE_FULL');
    });
  });

  describe('when a signed body is malformed', () => {
    it('answers 400 with the problem and its details by default; the handler never runs', async () => {
      const { server, counts } = await setUp();
      for (const raw of ['{"a": ', '[1, 2]']) {
        const answer = await post(server, raw);
        expect(answer.statusCode).toBe(400);
        expect(answer.json().error).toMatchObject({ code: 'SB_HTTP_BAD_REQUEST', details: { path: 'body' } });
      }
      expect((await post(server, '{"a": ')).json().error.message).toBe('body: malformed JSON');
      expect(counts.handled).toBe(0);
    });

    it('answers 200 and logs the problem when the adapter acknowledges malformed bodies', async () => {
      const { server, counts, lines } = await setUp({ malformed: 'acknowledge' });
      const answer = await post(server, '"text"');
      expect([answer.statusCode, answer.body]).toEqual([200, '']);
      expect(lines).toEqual([
        {
          fields: { problem: 'body: expected a JSON object' },
          message: 'malformed webhook body acknowledged',
        },
      ]);
      expect(counts.handled).toBe(0);
    });
  });

  describe('when parse fails for another reason than a malformed body', () => {
    it('leaves the answer to the server (5xx, redelivered), even where malformed bodies are acknowledged', async () => {
      const { server, counts, lines } = await setUp({
        malformed: 'acknowledge',
        parse: () => {
          throw new TypeError('a bug in the parser');
        },
      });
      expect((await post(server, '{"a": 1}')).statusCode).toBe(500);
      expect(lines).toEqual([]);
      expect(counts.handled).toBe(0);
    });
  });

  describe('when the content type is not one the route reads', () => {
    it('answers 415, and reads every type it was given', async () => {
      const { server, handled } = await setUp({
        contentTypes: ['application/json', 'application/x-www-form-urlencoded'],
        parse: (rawBody) => ({ raw: rawBody }),
      });
      expect((await post(server, 'a=1', { contentType: 'text/plain' })).statusCode).toBe(415);
      expect(
        (await post(server, 'a=1', { contentType: 'application/x-www-form-urlencoded' })).statusCode,
      ).toBe(200);
      expect(handled.map((entry) => entry.body)).toEqual([{ raw: 'a=1' }]);
    });
  });

  describe('when the server allows bodies larger than fastify’s default', () => {
    it('keeps the server’s limit rather than a smaller one of its own', async () => {
      const { server } = await setUp({ bodyLimit: 3 * 1024 * 1024, parse: () => ({}) });
      const big = JSON.stringify({ text: 'x'.repeat(2 * 1024 * 1024) });
      expect((await post(server, big)).statusCode).toBe(200);
      expect((await post(server, JSON.stringify({ text: 'x'.repeat(4 * 1024 * 1024) }))).statusCode).toBe(
        413,
      );
    });
  });
});
