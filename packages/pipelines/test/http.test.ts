import { gzipSync } from 'node:zlib';
import { isSwitchboardError, SwitchboardError } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { createHttpPipeline, HttpPipelineOptionsSchema } from '../src/http.js';
import { MAX_ANSWER_BYTES } from '../src/answer-size.js';
import { verifySignature } from '../src/signature.js';
import { type FakeAnswer, type RecordedRequest, refusedUrl, useFakeServers } from './fake-server.js';
import { queryOf, rejectionOf, runContext } from './query.js';

const SECRET = 'hmac-secret-value';

const startServer = useFakeServers();

async function pipelineAnswering(answer: (request: RecordedRequest) => FakeAnswer, extra: object = {}) {
  const server = await startServer(answer);
  const options = HttpPipelineOptionsSchema.parse({ type: 'http', url: `${server.url}/answer`, ...extra });
  return { pipeline: createHttpPipeline('bot', options), server };
}

async function failureOf(answer: FakeAnswer, extra: object = {}): Promise<SwitchboardError> {
  const { pipeline } = await pipelineAnswering(() => answer, extra);
  const error = await rejectionOf(pipeline.run(queryOf(['hi']), runContext()));
  if (!isSwitchboardError(error)) throw error;
  return error;
}

describe('createHttpPipeline', () => {
  describe('when the endpoint answers replies with attachments', () => {
    it('answers them as given', async () => {
      const replies = [
        {
          text: 'chart',
          attachments: [{ type: 'image', data: 'iVBORw0KGgo=', name: 'c.png', mime_type: 'image/png' }],
        },
        { attachments: [{ type: 'file', url: 'https://example.com/r.pdf' }] },
      ];
      const { pipeline } = await pipelineAnswering(() => ({ status: 200, body: { replies } }));

      await expect(pipeline.run(queryOf(['hi']), runContext())).resolves.toEqual({ replies });
    });
  });

  describe('when the endpoint answers with replies', () => {
    it('POSTs the query as JSON with every field of the documented body', async () => {
      const { pipeline, server } = await pipelineAnswering(() => ({ status: 200, body: { replies: [] } }));
      const query = queryOf(['first', 'second']);

      await pipeline.run(query, runContext());

      const [request] = server.requests;
      expect(request?.method).toBe('POST');
      expect(request?.url).toBe('/answer');
      expect(request?.headers['content-type']).toBe('application/json');
      expect(request?.headers['user-agent']).toBe('switchboard');
      expect(JSON.parse(request?.body ?? '')).toEqual({
        id: 'turn-1',
        attempt: 2,
        pipeline: 'bot',
        routed_by_rule: true,
        session: {
          key: 'telegram:tg:group:-100123:7',
          platform: 'telegram',
          channel: 'tg',
          chat_type: 'group',
          chat_id: '-100123',
          thread: '7',
        },
        sender: { id: 'u1', name: 'Ada' },
        text: 'first\nsecond',
        messages: query.messages.map((message, index) => ({
          id: message.id,
          platform_message_id: `m${index}`,
          text: ['first', 'second'][index],
          sender: { id: 'u1', name: 'Ada' },
          received_at: 1_700_000_000_000 + index,
          elements: [{ type: 'text', text: ['first', 'second'][index] }],
          event: null,
        })),
        event: null,
        handoff: null,
      });
    });

    it('sends the event a turn reports, on the turn and on its message', async () => {
      const { pipeline, server } = await pipelineAnswering(() => ({ status: 200, body: { replies: [] } }));
      const event = { type: 'edited', message_id: 'm-original' } as const;
      const query = queryOf(['hello, edited'], { event });

      await pipeline.run(query, runContext());

      const body = JSON.parse(server.requests[0]?.body ?? '');
      expect(body.event).toEqual(event);
      expect(body.messages[0].event).toEqual(event);
    });

    it('passes on a handoff the endpoint asks for, and sends a resumed turn its transcript', async () => {
      const { pipeline, server } = await pipelineAnswering(() => ({
        status: 200,
        body: { replies: [{ text: 'a person will answer' }], handoff: { reason: 'billing' } },
      }));
      const query = queryOf(['hi']);
      const handoff = {
        reason: 'billing',
        by: 'pipeline:bot',
        started_at: 5,
        transcript: [{ from: 'operator' as const, at: 6, id: 'r1', name: 'ann', text: 'hello' }],
      };
      const resumed = { ...query, messages: query.messages.map((message) => ({ ...message, handoff })) };

      const result = await pipeline.run(resumed, runContext());

      expect(result).toEqual({ replies: [{ text: 'a person will answer' }], handoff: { reason: 'billing' } });
      expect(JSON.parse(server.requests[0]?.body ?? '').handoff).toEqual(handoff);
    });

    it('refuses a handoff without a reason as a malformed answer', async () => {
      const { pipeline } = await pipelineAnswering(() => ({
        status: 200,
        body: { replies: [], handoff: {} },
      }));
      await expect(pipeline.run(queryOf(['hi']), runContext())).rejects.toThrow(/handoff\.reason/);
    });

    it('returns the replies in order', async () => {
      const { pipeline } = await pipelineAnswering((request) => ({
        status: 200,
        body: { replies: [{ text: `got ${JSON.parse(request.body).text}` }, { text: 'bye' }] },
      }));

      const result = await pipeline.run(queryOf(['hi']), runContext());

      expect(result).toEqual({ replies: [{ text: 'got hi' }, { text: 'bye' }] });
    });

    it('sends null for a missing thread and sender name', async () => {
      const { pipeline, server } = await pipelineAnswering(() => ({ status: 200, body: { replies: [] } }));

      await pipeline.run(
        queryOf(['hi'], { chat: { type: 'person', id: '42' }, sender: { id: 'u9' } }),
        runContext(),
      );

      const body = JSON.parse(server.requests[0]?.body ?? '');
      expect(body.session.thread).toBeNull();
      expect(body.sender).toEqual({ id: 'u9', name: null });
    });
  });

  describe('when a secret is configured', () => {
    it('signs the exact body so that verifySignature accepts it', async () => {
      const { pipeline, server } = await pipelineAnswering(() => ({ status: 200, body: { replies: [] } }), {
        secret: SECRET,
      });

      await pipeline.run(queryOf(['hi']), runContext());

      const request = server.requests[0]!;
      const header = request.headers['x-switchboard-signature'] as string;
      expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      expect(verifySignature(SECRET, header, request.body)).toBe(true);
      expect(verifySignature('wrong-secret', header, request.body)).toBe(false);
      expect(verifySignature(SECRET, header, request.body, { nowMs: Date.now() + 10 * 60_000 })).toBe(false);
    });
  });

  describe('when no secret is configured', () => {
    it('sends no signature header', async () => {
      const { pipeline, server } = await pipelineAnswering(() => ({ status: 200, body: { replies: [] } }));

      await pipeline.run(queryOf(['hi']), runContext());

      expect(server.requests[0]?.headers['x-switchboard-signature']).toBeUndefined();
    });
  });

  describe('when the turn is traced', () => {
    it("sends the call's trace context as traceparent, so the backend joins the trace", async () => {
      const { pipeline, server } = await pipelineAnswering(() => ({ status: 200, body: { replies: [] } }));

      await pipeline.run(queryOf(['hi']), {
        ...runContext(),
        traceHeaders: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
      });

      expect(server.requests[0]?.headers.traceparent).toBe(
        '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      );
    });
  });

  describe('when tracing is off', () => {
    it('sends no traceparent', async () => {
      const { pipeline, server } = await pipelineAnswering(() => ({ status: 200, body: { replies: [] } }));

      await pipeline.run(queryOf(['hi']), runContext());

      expect(server.requests[0]?.headers.traceparent).toBeUndefined();
    });
  });

  describe('when custom headers are configured', () => {
    it('sends them with the request', async () => {
      const { pipeline, server } = await pipelineAnswering(() => ({ status: 200, body: { replies: [] } }), {
        headers: { authorization: 'Bearer bot-token', 'x-tenant': 'acme' },
      });

      await pipeline.run(queryOf(['hi']), runContext());

      expect(server.requests[0]?.headers.authorization).toBe('Bearer bot-token');
      expect(server.requests[0]?.headers['x-tenant']).toBe('acme');
    });
  });

  describe('when the endpoint answers 408, 429 or 5xx', () => {
    it.each([500, 502, 503, 429, 408])(
      'fails %i as retryable with the status and a body excerpt',
      async (status) => {
        const error = await failureOf({ status, body: { error: 'busy' } });

        expect(error.code).toBe('SB_PIPELINE_FAILED');
        expect(error.retryable).toBe(true);
        expect(error.details).toMatchObject({ status, body: '{"error":"busy"}' });
        expect(error.retryAfterMs).toBeUndefined();
      },
    );

    it('passes a Retry-After in seconds on as retryAfterMs', async () => {
      const error = await failureOf({ status: 429, headers: { 'retry-after': '3' } });

      expect(error.retryable).toBe(true);
      expect(error.retryAfterMs).toBe(3000);
    });

    it('passes a Retry-After HTTP date on as the wait until then', async () => {
      const at = new Date(Date.now() + 60_000).toUTCString();

      const error = await failureOf({ status: 503, headers: { 'retry-after': at } });

      expect(error.retryAfterMs).toBeGreaterThan(55_000);
      expect(error.retryAfterMs).toBeLessThanOrEqual(60_000);
    });
  });

  describe('when the endpoint answers another 4xx', () => {
    it.each([400, 401, 404, 422])('fails %i as fatal', async (status) => {
      const error = await failureOf({ status, body: 'nope' });

      expect(error.code).toBe('SB_PIPELINE_FAILED');
      expect(error.retryable).toBe(false);
      expect(error.details).toMatchObject({ status, body: 'nope' });
    });

    it('masks the secret and header values if the endpoint echoes them', async () => {
      const { pipeline } = await pipelineAnswering(
        (request) => ({ status: 400, body: { echo: request.headers, secret: SECRET } }),
        { secret: SECRET, headers: { authorization: 'Bearer bot-token' } },
      );

      const error = await rejectionOf(pipeline.run(queryOf(['hi']), runContext()));

      const seen = JSON.stringify({
        message: (error as Error).message,
        details: (error as SwitchboardError).details,
      });
      expect(seen).toContain('***');
      expect(seen).not.toContain(SECRET);
      expect(seen).not.toContain('bot-token');
    });

    it('masks a secret that straddles the 200-character cut of the excerpt', async () => {
      // The secret starts 5 characters before the cut: cutting first would keep "hmac-".
      const body = `${'x'.repeat(195)}${SECRET} and more`;

      const error = await failureOf({ status: 400, body }, { secret: SECRET });

      expect(error.details?.body).toBe(`${'x'.repeat(195)}*** a…`);
      expect(JSON.stringify({ message: error.message, details: error.details })).not.toContain('hmac-');
    });
  });

  describe('when the endpoint answers 2xx with a malformed body', () => {
    it('fails as fatal naming the bad field', async () => {
      const error = await failureOf({ status: 200, body: { replies: [{ text: 42 }] } });

      expect(error.code).toBe('SB_PIPELINE_FAILED');
      expect(error.retryable).toBe(false);
      expect(error.message).toContain('replies[0].text');
      expect(error.details?.problems).toEqual([expect.stringMatching(/^replies\[0\]\.text: /)]);
    });

    it('fails as fatal naming the attachment field that is invalid', async () => {
      const error = await failureOf({
        status: 200,
        body: { replies: [{ text: 'a', attachments: [{ type: 'image', data: 'not base64!' }] }] },
      });

      expect(error.retryable).toBe(false);
      expect(error.details?.problems).toEqual([
        'replies[0].attachments[0].data: must be standard base64 (A-Z a-z 0-9 + /, padded with =)',
      ]);
    });

    it('fails as fatal when replies is missing', async () => {
      const error = await failureOf({ status: 200, body: { reply: 'hi' } });

      expect(error.retryable).toBe(false);
      expect(error.message).toContain('replies');
    });

    it('fails as fatal when the body is not JSON', async () => {
      const error = await failureOf({ status: 200, body: '<html>oops</html>' });

      expect(error.retryable).toBe(false);
      expect(error.message).toContain('not JSON');
      expect(error.details).toMatchObject({ body: '<html>oops</html>' });
    });
  });

  describe('when the endpoint answers compressed', () => {
    it('asks for an uncompressed answer by default', async () => {
      const { pipeline, server } = await pipelineAnswering(() => ({ status: 200, body: { replies: [] } }));

      await pipeline.run(queryOf(['hi']), runContext());

      expect(server.requests[0]?.headers['accept-encoding']).toBe('identity');
    });

    it('fails as fatal naming the encoding, when the headers asked for it', async () => {
      const error = await failureOf(
        {
          status: 200,
          headers: { 'content-encoding': 'gzip' },
          body: gzipSync(JSON.stringify({ replies: [{ text: 'hi' }] })),
        },
        { headers: { 'accept-encoding': 'gzip' } },
      );

      expect(error).toMatchObject({ code: 'SB_PIPELINE_FAILED', retryable: false });
      expect(error.message).toContain('content-encoding: gzip');
      expect(error.details).toMatchObject({ content_encoding: 'gzip' });
    });
  });

  describe('when the endpoint redirects', () => {
    it('follows a 307 to the same origin with the same POST and signature', async () => {
      const { pipeline, server } = await pipelineAnswering(
        (request) =>
          request.url === '/answer'
            ? { status: 307, headers: { location: '/moved' } }
            : { status: 200, body: { replies: [{ text: 'moved' }] } },
        { secret: SECRET },
      );

      expect(await pipeline.run(queryOf(['hi']), runContext())).toEqual({ replies: [{ text: 'moved' }] });
      const [first, second] = server.requests;
      expect(second).toMatchObject({ method: 'POST', url: '/moved', body: first?.body });
      expect(second?.headers['x-switchboard-signature']).toBe(first?.headers['x-switchboard-signature']);
    });

    it('fails as fatal on a 301, naming the location, without turning the POST into a GET', async () => {
      const { pipeline, server } = await pipelineAnswering(() => ({
        status: 301,
        headers: { location: 'https://example.test/answer' },
      }));

      const error = await rejectionOf(pipeline.run(queryOf(['hi']), runContext()));

      expect(error).toMatchObject({ code: 'SB_PIPELINE_FAILED', retryable: false });
      expect((error as SwitchboardError).message).toContain('redirects (301 to https://example.test/answer)');
      expect(server.requests.map((request) => request.method)).toEqual(['POST']);
    });
  });

  describe('when the answer is larger than 16 MiB', () => {
    it('fails as fatal naming the bound', async () => {
      const error = await failureOf({ status: 200, body: 'x'.repeat(MAX_ANSWER_BYTES + 1) });

      expect(error).toMatchObject({ code: 'SB_PIPELINE_ANSWER_TOO_LARGE', retryable: false });
      expect(error.message).toBe(`pipeline bot: the answer is larger than ${MAX_ANSWER_BYTES} bytes`);
    });
  });

  describe('when nothing listens at the url', () => {
    it('fails as retryable naming the network error', async () => {
      const options = HttpPipelineOptionsSchema.parse({
        type: 'http',
        url: await refusedUrl(),
        secret: SECRET,
      });

      const error = await rejectionOf(createHttpPipeline('bot', options).run(queryOf(['hi']), runContext()));

      expect(isSwitchboardError(error, 'SB_PIPELINE_FAILED')).toBe(true);
      expect((error as SwitchboardError).retryable).toBe(true);
      expect((error as SwitchboardError).message).toContain('ECONNREFUSED');
      expect((error as SwitchboardError).message).not.toContain(SECRET);
    });
  });

  describe('when the run is aborted before the endpoint answers', () => {
    it('fails with SB_PIPELINE_TIMEOUT, retryable', async () => {
      const { pipeline, server } = await pipelineAnswering(() => 'hang');
      const context = runContext();
      const running = rejectionOf(pipeline.run(queryOf(['hi']), context));

      await server.nextRequest();
      context.controller.abort();

      const error = await running;
      expect(isSwitchboardError(error, 'SB_PIPELINE_TIMEOUT')).toBe(true);
      expect((error as SwitchboardError).retryable).toBe(true);
    });

    it('rethrows the abort reason when the controller gave a SwitchboardError', async () => {
      const { pipeline, server } = await pipelineAnswering(() => 'hang');
      const context = runContext();
      const running = rejectionOf(pipeline.run(queryOf(['hi']), context));
      const reason = new SwitchboardError('SB_SHUTDOWN', { retryable: true });

      await server.nextRequest();
      context.controller.abort(reason);

      expect(await running).toBe(reason);
    });
  });
});

describe('HttpPipelineOptionsSchema', () => {
  describe('when the url is not http(s)', () => {
    it('refuses it on the url key', () => {
      const result = HttpPipelineOptionsSchema.safeParse({ type: 'http', url: 'ftp://example.com/x' });

      expect(result.error?.issues.map((issue) => issue.path)).toEqual([['url']]);
    });
  });

  describe('when an unknown key is given', () => {
    it('refuses it', () => {
      expect(
        HttpPipelineOptionsSchema.safeParse({ type: 'http', url: 'https://x.test', tiemout: 1 }).success,
      ).toBe(false);
    });
  });
});
