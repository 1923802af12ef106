import { newMessageId, sessionKeyOf, silentLogger } from '@switchboard/core';
import { idempotencyFingerprint } from '@switchboard/http';
import { afterEach, describe, expect, it } from 'vitest';
import { toInboundMessage } from '../src/normalize.js';
import {
  type Harness,
  createEchoPipeline,
  createGatedPipeline,
  createHarness,
  eventually,
} from './harness.js';

const message = (fields: Record<string, unknown> = {}) => ({
  session_id: 's1',
  user_id: 'u1',
  text: 'hello',
  ...fields,
});

describe('openapi channel', () => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });

  const post = (payload: unknown, headers: Record<string, string> = {}) =>
    h.server.inject({ method: 'POST', url: '/v1/messages', payload: payload as object, headers });
  const getStatus = (id: string) => h.server.inject({ method: 'GET', url: `/v1/messages/${id}` });

  describe('when a message is posted with wait=true to the echo pipeline', () => {
    it('answers 200 with the replies, the pipeline and the turn, and GET reports the same', async () => {
      h = await createHarness();
      const response = await post(message({ text: 'hi there' }));

      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(body).toMatchObject({
        status: 'completed',
        pipeline: 'echo',
        replies: [{ text: 'hi there' }],
        error: null,
      });
      expect(body.id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(body.turn).toEqual(expect.any(String));

      const status = await getStatus(body.id);
      expect(status.statusCode).toBe(200);
      expect(status.json()).toEqual({ ...body, rule: null });
    });

    it('hands the engine a unified openapi message addressed to the bot', async () => {
      h = await createHarness();
      await post(message({ user_name: 'Ada', chat_type: 'group' }), { 'idempotency-key': 'k-1' });

      const outcome = h.outcomes[0];
      expect(outcome?.kind).toBe('completed');
      expect(outcome?.message).toMatchObject({
        platform: 'openapi',
        channel: 'api',
        chat: { type: 'group', id: 's1' },
        sender: { id: 'u1', name: 'Ada', is_bot: false },
        elements: [{ type: 'text', text: 'hello' }],
        text: 'hello',
        mentions_bot: true,
        platform_message_id: 'k-1',
      });
      expect(outcome?.message.accepted_by).toBeUndefined();
    });

    it('stamps the message with this replica when the pool is shared, so that its events come back here', async () => {
      h = await createHarness({ replicaId: 'replica-a' });
      await post(message());
      expect(h.outcomes[0]?.message.accepted_by).toBe('replica-a');
    });
  });

  describe('when wait=false', () => {
    it('answers 202 queued at once, and GET later shows the completed status with replies', async () => {
      h = await createHarness();
      const response = await post(message({ wait: false }));

      expect(response.statusCode).toBe(202);
      const { id } = response.json();
      expect(response.json()).toMatchObject({ status: 'queued', pipeline: 'echo', replies: [] });
      const done = await eventually(async () => {
        const body = (await getStatus(id)).json();
        return body.status === 'completed' ? body : undefined;
      });
      expect(done).toMatchObject({ id, replies: [{ text: 'hello' }], turn: expect.any(String) });
    });
  });

  describe('when the pipeline is slower than timeout_ms', () => {
    it('answers 202 running, and the status completes once the pipeline answers', async () => {
      const slow = createGatedPipeline('slow');
      h = await createHarness({ pipelines: [{ pipeline: slow }] });
      const response = await post(message({ timeout_ms: 50 }));

      expect(response.statusCode).toBe(202);
      expect(response.json()).toMatchObject({
        status: 'running',
        pipeline: 'slow',
        turn: expect.any(String),
      });
      slow.release();
      const done = await eventually(async () => {
        const body = (await getStatus(response.json().id)).json();
        return body.status === 'completed' ? body : undefined;
      });
      expect(done.replies).toEqual([{ text: 'gated: hello' }]);
    });
  });

  describe('when a routing rule discards the message', () => {
    it('answers 200 discarded with the rule, and GET reports it', async () => {
      h = await createHarness({
        routing: {
          default: 'echo',
          rules: [
            {
              name: 'drop-ads',
              type: 'message_content',
              operator: 'contains',
              value: 'buy now',
              pipeline: '__discard__',
            },
          ],
        },
      });
      const response = await post(message({ text: 'buy now!' }));

      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({ status: 'discarded', rule: 'drop-ads', replies: [] });
      expect((await getStatus(response.json().id)).json()).toMatchObject({
        status: 'discarded',
        rule: 'drop-ads',
      });
    });
  });

  describe('when the pipeline fails for good while the request waits', () => {
    it('answers 200 dead_lettered with the reason and the error, not a server error', async () => {
      const failing = {
        id: 'failing',
        async run(): Promise<never> {
          throw new Error('backend exploded');
        },
      };
      h = await createHarness({ pipelines: [{ pipeline: failing }] });
      const response = await post(message());

      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({
        status: 'dead_lettered',
        reason: 'fatal_error',
        error: 'SB_PIPELINE_FAILED: backend exploded',
      });
      expect((await getStatus(response.json().id)).json()).toMatchObject({ status: 'dead_lettered' });
    });

    it('records the dead letter reply on the status', async () => {
      const failing = {
        id: 'failing',
        async run(): Promise<never> {
          throw new Error('backend exploded');
        },
      };
      h = await createHarness({
        pipelines: [{ pipeline: failing, policy: { dead_letter_reply: 'Sorry, not now.' } }],
      });
      const { id } = (await post(message())).json();

      const status = await eventually(async () => {
        const body = (await getStatus(id)).json();
        return body.replies.length > 0 ? body : undefined;
      });
      expect(status).toMatchObject({ status: 'dead_lettered', replies: [{ text: 'Sorry, not now.' }] });
    });
  });

  describe('when the request is invalid', () => {
    const expectBadRequest = async (response: Awaited<ReturnType<typeof post>>, ...lines: string[]) => {
      expect(response.statusCode).toBe(400);
      const { error } = response.json();
      expect(error.code).toBe('SB_HTTP_BAD_REQUEST');
      for (const line of lines) {
        expect(error.message).toContain(line);
        expect(error.details.problems).toContain(line);
      }
    };

    it('names a field of the wrong type', async () => {
      h = await createHarness();
      await expectBadRequest(
        await post(message({ text: 5 })),
        'body.text: Invalid input: expected string, received number',
      );
    });

    it('names every missing field', async () => {
      h = await createHarness();
      const response = await post({ text: 'hi' });
      await expectBadRequest(
        response,
        'body.session_id: Invalid input: expected string, received undefined',
        'body.user_id: Invalid input: expected string, received undefined',
      );
    });

    it('names unknown keys', async () => {
      h = await createHarness();
      await expectBadRequest(
        await post(message({ colour: 'red', sender: 'x' })),
        'body.colour: unknown key',
        'body.sender: unknown key',
      );
    });

    it('names a bad Idempotency-Key header and leaves the other headers as they came', async () => {
      h = await createHarness();
      await expectBadRequest(
        await post(message(), { 'idempotency-key': 'k'.repeat(257) }),
        'headers.idempotency-key: Too big: expected string to have <=256 characters',
      );
      const accepted = await post(message(), { 'idempotency-key': 'k-1', 'x-trace': 'abc' });
      expect(accepted.statusCode).toBe(200);
    });

    it('refuses a timeout_ms above the channel maximum', async () => {
      h = await createHarness({ channel: { wait_timeout: '5s', max_wait_timeout: '10s' } });
      const response = await post(message({ timeout_ms: 10_001 }));
      expect(response.statusCode).toBe(400);
      expect(response.json().error.message).toContain('body.timeout_ms: Too big');
    });

    it('answers malformed JSON with 400 "body: malformed JSON"', async () => {
      h = await createHarness();
      const response = await post('{"session_id": "s1",', { 'content-type': 'application/json' });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        error: { code: 'SB_HTTP_BAD_REQUEST', message: 'body: malformed JSON' },
      });
    });

    it('answers an empty JSON body with 400 saying so', async () => {
      h = await createHarness();
      const response = await h.server.inject({
        method: 'POST',
        url: '/v1/messages',
        headers: { 'content-type': 'application/json' },
      });
      expect(response.statusCode).toBe(400);
      expect(response.json().error.message).toMatch(/^body: empty/);
    });

    it('answers an unsupported content type with 415', async () => {
      h = await createHarness();
      const response = await post('<message/>', { 'content-type': 'application/xml' });
      expect(response.statusCode).toBe(415);
      expect(response.json().error).toMatchObject({ code: 'SB_HTTP_UNSUPPORTED_MEDIA_TYPE' });
    });

    it('answers a body over the server limit with 413', async () => {
      h = await createHarness({ bodyLimit: 1024 });
      const response = await post(message({ text: 'x'.repeat(2000) }));
      expect(response.statusCode).toBe(413);
      expect(response.json().error.code).toBe('SB_HTTP_PAYLOAD_TOO_LARGE');
      expect(h.outcomes).toHaveLength(0);
    });
  });

  describe('when api_keys are configured', () => {
    it('answers 401 with a challenge without a key or with a wrong one, and accepts a right one', async () => {
      h = await createHarness({ channel: { api_keys: ['k-one', 'k-two'] } });

      const missing = await post(message());
      expect(missing.statusCode).toBe(401);
      expect(missing.json().error.code).toBe('SB_HTTP_UNAUTHORIZED');
      expect(missing.headers['www-authenticate']).toBe('Bearer realm="switchboard"');

      const wrong = await post(message(), { authorization: 'Bearer k-three' });
      expect(wrong.statusCode).toBe(401);
      expect(wrong.headers['www-authenticate']).toContain('error="invalid_token"');
      expect(h.outcomes).toHaveLength(0);

      const right = await post(message(), { authorization: 'Bearer k-two' });
      expect(right.statusCode).toBe(200);
    });

    it('admits non-loopback clients that present a key', async () => {
      h = await createHarness({ channel: { api_keys: ['k-one'] } });
      const response = await h.server.inject({
        method: 'GET',
        url: '/v1/messages/unknown',
        remoteAddress: '203.0.113.7',
        headers: { authorization: 'Bearer k-one' },
      });
      expect(response.statusCode).toBe(404);
    });
  });

  describe('when no api_keys are configured', () => {
    it('answers 403 to a client outside loopback and serves loopback clients', async () => {
      h = await createHarness();
      const remote = await h.server.inject({
        method: 'POST',
        url: '/v1/messages',
        payload: message(),
        remoteAddress: '203.0.113.7',
      });
      expect(remote.statusCode).toBe(403);
      expect(remote.json().error.code).toBe('SB_HTTP_FORBIDDEN');

      const local = await h.server.inject({
        method: 'POST',
        url: '/v1/messages',
        payload: message(),
        remoteAddress: '::ffff:127.0.0.1',
      });
      expect(local.statusCode).toBe(200);
    });
  });

  describe('when more requests than max_concurrent_requests are in flight', () => {
    it('answers 429 with Retry-After: 1, and accepts again once a slot is free', async () => {
      const slow = createGatedPipeline('slow');
      h = await createHarness({ channel: { max_concurrent_requests: 1 }, pipelines: [{ pipeline: slow }] });
      const first = post(message({ text: 'one' }));
      await eventually(async () => (slow.runs.length === 1 ? true : undefined));

      const second = await post(message({ session_id: 's2', text: 'two' }));
      expect(second.statusCode).toBe(429);
      expect(second.json().error.code).toBe('SB_HTTP_TOO_MANY_REQUESTS');
      expect(second.headers['retry-after']).toBe('1');

      slow.release();
      expect((await first).statusCode).toBe(200);
      expect((await post(message({ session_id: 's3', text: 'three' }))).statusCode).toBe(200);
    });
  });

  describe('when the queue is full', () => {
    it('answers 429 SB_QUEUE_FULL with Retry-After', async () => {
      const slow = createGatedPipeline('slow');
      h = await createHarness({ maxPending: 1, pipelines: [{ pipeline: slow }] });
      expect((await post(message({ wait: false, text: 'runs' }))).statusCode).toBe(202);
      await eventually(async () => (slow.runs.length === 1 ? true : undefined));
      expect((await post(message({ wait: false, text: 'waits' }))).statusCode).toBe(202);

      const refused = await post(message({ wait: false, text: 'refused' }));
      expect(refused.statusCode).toBe(429);
      expect(refused.json().error.code).toBe('SB_QUEUE_FULL');
      expect(refused.headers['retry-after']).toBe('1');
    });
  });

  describe('when the channel is not running', () => {
    it('answers 503 SB_DRAINING with Retry-After before start and after stop, and 200 between', async () => {
      h = await createHarness({ start: false });
      expect(h.channel.health().ready).toBe(false);
      const early = await post(message());
      expect(early.statusCode).toBe(503);
      expect(early.json().error.code).toBe('SB_DRAINING');
      expect(early.headers['retry-after']).toBe('5');

      h.controller.start();
      await h.startChannel();
      expect(h.channel.health().ready).toBe(true);
      expect((await post(message())).statusCode).toBe(200);

      await h.channel.stop();
      expect((await getStatus('any')).statusCode).toBe(503);
    });

    it('answers 503 SB_DRAINING when the engine drains', async () => {
      h = await createHarness();
      await h.controller.stop({ drainTimeoutMs: 50 });
      const response = await post(message());
      expect(response.statusCode).toBe(503);
      expect(response.json().error.code).toBe('SB_DRAINING');
      expect(response.headers['retry-after']).toBeDefined();
    });
  });

  describe('when a request is retried with the same Idempotency-Key', () => {
    it('answers with the same message and runs the pipeline once', async () => {
      const echo = createEchoPipeline('echo');
      h = await createHarness({ pipelines: [{ pipeline: echo }] });
      const headers = { 'idempotency-key': 'order-42' };

      const first = await post(message(), headers);
      const retry = await post(message(), headers);

      expect(first.statusCode).toBe(200);
      expect(retry.statusCode).toBe(200);
      expect(retry.json()).toEqual(first.json());
      expect(echo.runs).toHaveLength(1);
      const other = await post(message(), { 'idempotency-key': 'order-43' });
      expect(other.json().id).not.toBe(first.json().id);
    });

    it('admits concurrent retries once, even when accepting takes a while', async () => {
      const echo = createEchoPipeline('echo');
      h = await createHarness({ pipelines: [{ pipeline: echo }], enqueueDelayMs: 20 });
      const headers = { 'idempotency-key': 'order-42' };

      const answers = await Promise.all([
        post(message(), headers),
        post(message(), headers),
        post(message(), headers),
      ]);

      expect(new Set(answers.map((answer) => answer.json().id)).size).toBe(1);
      expect(answers.map((answer) => answer.json().status)).toEqual(['completed', 'completed', 'completed']);
      expect(echo.runs).toHaveLength(1);
    });

    it('waits for a message still running, as the first request did', async () => {
      const slow = createGatedPipeline('slow');
      h = await createHarness({ pipelines: [{ pipeline: slow }] });
      const headers = { 'idempotency-key': 'order-42' };
      const first = await post(message({ wait: false }), headers);
      expect(first.statusCode).toBe(202);

      const retry = post(message(), headers);
      await eventually(async () => (slow.runs.length === 1 ? true : undefined));
      slow.release();
      expect((await retry).json()).toMatchObject({ id: first.json().id, status: 'completed' });
      expect(slow.runs).toHaveLength(1);
    });

    it('finds a message recovered after a restart before its status was written, and runs it once', async () => {
      const echo = createEchoPipeline('echo');
      h = await createHarness({ pipelines: [{ pipeline: echo }], start: false });
      // The stop came after the journal held the message and the key was bound, before `queued`
      // was written: the journal gives the message back, the status store knows nothing of it.
      const id = newMessageId();
      const recovered = toInboundMessage(
        { ...message(), chat_type: 'person', wait: true },
        { id, channelId: 'api', idempotencyKey: 'order-42', receivedAt: Date.now() },
      );
      const queued = {
        message: recovered,
        session: sessionKeyOf(recovered, 'chat'),
        pipeline: 'echo',
        routedByRule: false,
        attempt: 0,
        acceptedAt: Date.now(),
      };
      await h.pool.enqueue(queued);
      await h.statuses.claimIdempotencyKey({
        channel: 'api',
        credential: 'loopback',
        key: 'order-42',
        fingerprint: idempotencyFingerprint(['s1', 'u1', 'hello', null, 'person']),
        messageId: id,
        ttlMs: 60_000,
      });
      await h.channel.start({ ingress: h.ingress, logger: silentLogger, recovered: [queued] });

      const retry = post(message(), { 'idempotency-key': 'order-42' });
      // Let the retry be admitted before any turn can start, as when it races the replay.
      for (let tick = 0; tick < 20; tick++) await new Promise((resolve) => setImmediate(resolve));
      h.controller.start();

      expect((await retry).json()).toMatchObject({ id, status: 'completed' });
      await eventually(async () => ((await h.pool.stats()).pending === 0 ? true : undefined));
      await h.controller.stop({ drainTimeoutMs: 1000 });
      expect(echo.runs).toHaveLength(1);
      expect(h.outcomes.filter((outcome) => outcome.message.id === id)).toHaveLength(1);
    });

    it('accepts the retry of a request the full queue refused', async () => {
      const slow = createGatedPipeline('slow');
      h = await createHarness({ maxPending: 1, pipelines: [{ pipeline: slow }] });
      await post(message({ wait: false, text: 'runs' }));
      await eventually(async () => (slow.runs.length === 1 ? true : undefined));
      await post(message({ wait: false, text: 'waits' }));
      const headers = { 'idempotency-key': 'order-42' };
      expect((await post(message({ wait: false, text: 'later' }), headers)).statusCode).toBe(429);

      slow.release();
      await eventually(async () => ((await h.pool.stats()).pending === 0 ? true : undefined));
      const retry = await post(message({ text: 'later' }), headers);
      expect(retry.statusCode).toBe(200);
      expect(retry.json().replies).toEqual([{ text: 'gated: later' }]);
    });
  });

  describe('when a burst is merged into one turn', () => {
    it('gives every request of the burst the turn id and its replies', async () => {
      const echo = createEchoPipeline('echo');
      h = await createHarness({
        // Merged by count, whatever the time between the requests.
        pipelines: [
          { pipeline: echo, policy: { aggregation: { enabled: true, delay: '10s', max_messages: 3 } } },
        ],
      });

      const answers = await Promise.all(['a', 'b', 'c'].map((text) => post(message({ text }))));

      expect(echo.runs).toHaveLength(1);
      const bodies = answers.map((answer) => answer.json());
      expect(new Set(bodies.map((body) => body.id)).size).toBe(3);
      expect(new Set(bodies.map((body) => body.turn)).size).toBe(1);
      for (const body of bodies) {
        expect(body).toMatchObject({
          status: 'completed',
          turn: echo.runs[0]?.id,
          replies: [{ text: 'a\nb\nc' }],
        });
      }
    });
  });

  describe('when a message id is unknown', () => {
    it('answers 404 SB_HTTP_NOT_FOUND', async () => {
      h = await createHarness();
      const response = await getStatus('01JUNKNOWN0000000000000000');
      expect(response.statusCode).toBe(404);
      expect(response.json().error.code).toBe('SB_HTTP_NOT_FOUND');
    });

    it('answers 404 in the same shape for an unknown route under the prefix', async () => {
      h = await createHarness();
      const response = await h.server.inject({ method: 'GET', url: '/v1/nothing-here' });
      expect(response.statusCode).toBe(404);
      expect(response.json().error.code).toBe('SB_HTTP_NOT_FOUND');
    });
  });
});
