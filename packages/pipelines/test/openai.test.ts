import { gzipSync } from 'node:zlib';
import {
  type HistoryEntry,
  type HistoryStore,
  isSwitchboardError,
  type Query,
  type SwitchboardError,
} from '@switchboard/core';
import { afterEach, describe, expect, it } from 'vitest';
import { createOpenAIPipeline, OpenAIPipelineOptionsSchema } from '../src/openai.js';
import {
  type FakeAnswer,
  type RecordedRequest,
  refusedUrl,
  SOCKET_SLACK_BYTES,
  useFakeServers,
  useFloodServers,
} from './fake-server.js';
import { queryOf, rejectionOf, runContext, streamCounter } from './query.js';
import { eventually } from '@switchboard/testkit/eventually';
import { type FakeOpenAI, type FakeOpenAIAnswer, startFakeOpenAI } from '@switchboard/testkit/openai';

const API_KEY = 'sk-test-0123456789abcdef';

/** The HistoryStore port kept in a Map: enough to see what the pipeline reads and writes. */
function createMemoryHistoryStore(): HistoryStore & {
  entries(session: string, pipeline: string): HistoryEntry[];
} {
  const bySessionAndPipeline = new Map<string, HistoryEntry[]>();
  const keyOf = (session: string, pipeline: string) => JSON.stringify([session, pipeline]);
  return {
    async append(session, pipeline, entries) {
      bySessionAndPipeline.set(keyOf(session, pipeline), [...this.entries(session, pipeline), ...entries]);
    },
    async recent(session, pipeline, limit) {
      return limit === 0 ? [] : this.entries(session, pipeline).slice(-limit);
    },
    entries(session, pipeline) {
      return bySessionAndPipeline.get(keyOf(session, pipeline)) ?? [];
    },
  };
}

/** A standard chat-completions answer with one choice. */
function completion(content: string): FakeAnswer {
  return {
    status: 200,
    body: {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: 'gpt-test',
      choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    },
  };
}

const startServer = useFakeServers();

async function setUp(answer: (request: RecordedRequest) => FakeAnswer, extra: object = {}) {
  const server = await startServer(answer);
  const history = createMemoryHistoryStore();
  const options = OpenAIPipelineOptionsSchema.parse({
    type: 'openai',
    base_url: `${server.url}/v1`,
    api_key: API_KEY,
    model: 'gpt-test',
    ...extra,
  });
  return { pipeline: createOpenAIPipeline('assistant', options, { history }), history, server };
}

const sentBody = (request: RecordedRequest | undefined) => JSON.parse(request?.body ?? '');

async function failureOf(answer: FakeAnswer, query: Query = queryOf(['hi'])) {
  const setup = await setUp(() => answer);
  const error = await rejectionOf(setup.pipeline.run(query, runContext()));
  if (!isSwitchboardError(error)) throw error;
  return { error, server: setup.server, history: setup.history };
}

describe('createOpenAIPipeline', () => {
  describe('when the endpoint answers', () => {
    it('posts model, system prompt, history and the turn text with the API key as bearer', async () => {
      const { pipeline, history, server } = await setUp(() => completion('sure'), {
        system_prompt: 'You are terse.',
        temperature: 0.2,
      });
      const query = queryOf(['what time', 'is it?']);
      await history.append(query.session, 'assistant', [
        { role: 'user', content: 'hello' },
        { role: 'assistant', content: 'hi there' },
      ]);

      await pipeline.run(query, runContext());

      const request = server.requests[0];
      expect(request?.method).toBe('POST');
      expect(request?.url).toBe('/v1/chat/completions');
      expect(request?.headers.authorization).toBe(`Bearer ${API_KEY}`);
      expect(sentBody(request)).toMatchObject({
        model: 'gpt-test',
        temperature: 0.2,
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: 'hello' },
          { role: 'assistant', content: 'hi there' },
          { role: 'user', content: 'what time\nis it?' },
        ],
      });
    });

    it("sends the call's trace context as traceparent when the turn is traced, none otherwise", async () => {
      const { pipeline, server } = await setUp(() => completion('sure'));

      await pipeline.run(queryOf(['hi']), {
        ...runContext(),
        traceHeaders: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
      });
      await pipeline.run(queryOf(['again']), runContext());

      expect(server.requests.map((request) => request.headers.traceparent)).toEqual([
        '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
        undefined,
      ]);
    });

    it('replies with the first choice and appends the exchange to the history', async () => {
      const { pipeline, history } = await setUp(() => completion('It is noon.'));
      const query = queryOf(['what time is it?']);

      const result = await pipeline.run(query, runContext());

      expect(result.replies).toEqual([{ text: 'It is noon.' }]);
      // Handed to the controller rather than waited for, so that it joins the commit of the reply.
      await result.saved;
      expect(history.entries(query.session, 'assistant')).toEqual([
        { role: 'user', content: 'what time is it?' },
        { role: 'assistant', content: 'It is noon.' },
      ]);
    });

    it('sends the previous turn as context on the next one', async () => {
      let turn = 0;
      const { pipeline, server } = await setUp(() => completion(`answer ${++turn}`));

      await pipeline.run(queryOf(['one']), runContext());
      await pipeline.run(queryOf(['two']), runContext());

      expect(sentBody(server.requests[1]).messages).toEqual([
        { role: 'user', content: 'one' },
        { role: 'assistant', content: 'answer 1' },
        { role: 'user', content: 'two' },
      ]);
    });
  });

  describe('when vision is on and the turn carries images', () => {
    const url = 'http://gateway.test/v1/media/abc.def';
    const withImage = () =>
      queryOf(['what is this?'], {
        elements: [
          { type: 'image', file_id: 'f1', mime_type: 'image/jpeg', media_url: url },
          { type: 'image', file_id: 'f2', too_large: true, media_url: `${url}2` },
          { type: 'text', text: 'what is this?' },
        ],
      });

    it('sends each image not too large as an image_url part after the text, and keeps the text alone', async () => {
      const { pipeline, server, history } = await setUp(() => completion('a cat'), { vision: true });
      const query = withImage();
      await (await pipeline.run(query, runContext())).saved;
      expect(sentBody(server.requests[0]).messages).toEqual([
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'image_url', image_url: { url } },
          ],
        },
      ]);
      expect(history.entries(query.session, 'assistant')).toEqual([
        { role: 'user', content: 'what is this?' },
        { role: 'assistant', content: 'a cat' },
      ]);
    });

    it('sends the text alone when vision is off', async () => {
      const { pipeline, server } = await setUp(() => completion('a cat'));
      await pipeline.run(withImage(), runContext());
      expect(sentBody(server.requests[0]).messages).toEqual([{ role: 'user', content: 'what is this?' }]);
    });
  });

  describe('when the history is longer than history_turns', () => {
    it('sends only the last history_turns exchanges', async () => {
      const { pipeline, history, server } = await setUp(() => completion('ok'), { history_turns: 1 });
      const query = queryOf(['now']);
      await history.append(query.session, 'assistant', [
        { role: 'user', content: 'old' },
        { role: 'assistant', content: 'old answer' },
        { role: 'user', content: 'recent' },
        { role: 'assistant', content: 'recent answer' },
      ]);

      await pipeline.run(query, runContext());

      expect(sentBody(server.requests[0]).messages).toEqual([
        { role: 'user', content: 'recent' },
        { role: 'assistant', content: 'recent answer' },
        { role: 'user', content: 'now' },
      ]);
    });
  });

  describe('when history_turns is 0', () => {
    it('sends no history and keeps none', async () => {
      const { pipeline, history, server } = await setUp(() => completion('ok'), { history_turns: 0 });
      const query = queryOf(['now']);
      await history.append(query.session, 'assistant', [{ role: 'user', content: 'old' }]);

      await pipeline.run(query, runContext());

      expect(sentBody(server.requests[0]).messages).toEqual([{ role: 'user', content: 'now' }]);
      expect(history.entries(query.session, 'assistant')).toEqual([{ role: 'user', content: 'old' }]);
    });
  });

  describe('when the answer has no content', () => {
    it('fails as fatal naming the missing field and keeps no history', async () => {
      const answer: FakeAnswer = { status: 200, body: { id: 'x', object: 'chat.completion', choices: [] } };
      const query = queryOf(['hi']);

      const { error, history } = await failureOf(answer, query);

      expect(error.code).toBe('SB_PIPELINE_FAILED');
      expect(error.retryable).toBe(false);
      expect(error.message).toContain('choices[0].message.content');
      expect(history.entries(query.session, 'assistant')).toEqual([]);
    });
  });

  describe('when a choice after the first does not have the shape of a choice', () => {
    it('fails as fatal naming where, though the first choice has text', async () => {
      const choices = [{ message: { content: 'fine' } }, { message: { content: 42 } }];
      const { error } = await failureOf({ status: 200, body: { choices } });

      expect(error).toMatchObject({ code: 'SB_PIPELINE_FAILED', retryable: false });
      expect(error.message).toContain('choices[1].message.content');
    });
  });

  describe('when the first choice holds a refusal', () => {
    it('replies with the refusal', async () => {
      const { pipeline } = await setUp(() => ({
        status: 200,
        body: { choices: [{ message: { content: null, refusal: 'I cannot help with that' } }] },
      }));

      const result = await pipeline.run(queryOf(['hi']), runContext());

      expect(result.replies).toEqual([{ text: 'I cannot help with that' }]);
    });
  });

  describe('when organization and project are set', () => {
    it('sends them as OpenAI-Organization and OpenAI-Project', async () => {
      const { pipeline, server } = await setUp(() => completion('ok'), {
        organization: 'org-1',
        project: 'proj-1',
      });

      await pipeline.run(queryOf(['hi']), runContext());

      expect(server.requests[0]?.headers).toMatchObject({
        'openai-organization': 'org-1',
        'openai-project': 'proj-1',
      });
    });
  });

  describe('when the endpoint redirects with 307', () => {
    it('posts the same request to the new location and answers from there', async () => {
      const { pipeline, server } = await setUp((request) =>
        request.url === '/v1/chat/completions'
          ? { status: 307, headers: { location: '/v2/chat/completions' } }
          : completion('moved'),
      );

      expect((await pipeline.run(queryOf(['hi']), runContext())).replies).toEqual([{ text: 'moved' }]);
      expect(server.requests.map((request) => [request.method, request.url])).toEqual([
        ['POST', '/v1/chat/completions'],
        ['POST', '/v2/chat/completions'],
      ]);
      expect(sentBody(server.requests[1])).toMatchObject({ model: 'gpt-test' });
    });
  });

  describe('when the endpoint redirects to another origin', () => {
    it('fails as fatal naming where, and sends the request (and its key) nowhere else', async () => {
      const other = await startServer(() => completion('elsewhere'));
      const { pipeline, server } = await setUp(() => ({
        status: 307,
        headers: { location: `${other.url.replace('127.0.0.1', 'localhost')}/v1/chat/completions` },
      }));

      const error = await rejectionOf(pipeline.run(queryOf(['hi']), runContext()));

      expect(error).toMatchObject({ code: 'SB_PIPELINE_FAILED', retryable: false });
      expect((error as SwitchboardError).message).toContain(
        'the endpoint redirects (307 to http://localhost:',
      );
      expect(server.requests).toHaveLength(1);
      expect(other.requests).toHaveLength(0);
    });
  });

  describe('when the endpoint answers compressed although asked not to', () => {
    it('fails as fatal naming the encoding', async () => {
      const { pipeline, server } = await setUp(() => ({
        status: 200,
        headers: { 'content-encoding': 'gzip' },
        body: gzipSync(JSON.stringify({ choices: [] })),
      }));

      const error = await rejectionOf(pipeline.run(queryOf(['hi']), runContext()));

      expect(server.requests[0]?.headers['accept-encoding']).toBe('identity');
      expect(error).toMatchObject({ code: 'SB_PIPELINE_FAILED', retryable: false });
      expect((error as SwitchboardError).message).toContain(
        'compressed (content-encoding: gzip), which is not read; it was asked for none',
      );
    });
  });

  describe('when the answer is not JSON', () => {
    it('fails as fatal, saying so, with an excerpt of the body', async () => {
      const { error } = await failureOf({ status: 200, body: '<html>gateway page</html>' });

      expect(error).toMatchObject({ code: 'SB_PIPELINE_FAILED', retryable: false });
      expect(error.message).toContain('response body is not JSON');
      expect(error.details).toMatchObject({ body: '<html>gateway page</html>' });
    });
  });

  describe('when base_url ends with a slash', () => {
    it('posts to one /chat/completions below it', async () => {
      const server = await startServer(() => completion('ok'));
      const options = OpenAIPipelineOptionsSchema.parse({
        type: 'openai',
        base_url: `${server.url}/v1/`,
        api_key: API_KEY,
        model: 'gpt-test',
      });
      const pipeline = createOpenAIPipeline('assistant', options, { history: createMemoryHistoryStore() });

      expect((await pipeline.run(queryOf(['hi']), runContext())).replies).toEqual([{ text: 'ok' }]);
      expect(server.requests[0]?.url).toBe('/v1/chat/completions');
    });
  });

  describe('when the endpoint answers 5xx', () => {
    it('fails as retryable after exactly one request (the client does not retry)', async () => {
      const { error, server } = await failureOf({ status: 500, body: { error: { message: 'overloaded' } } });

      expect(error.code).toBe('SB_PIPELINE_FAILED');
      expect(error.retryable).toBe(true);
      expect(error.details).toMatchObject({ status: 500 });
      expect(server.requests).toHaveLength(1);
    });
  });

  describe('when the endpoint rate-limits', () => {
    it('fails as retryable with the requested wait', async () => {
      const { error, server } = await failureOf({
        status: 429,
        headers: { 'retry-after': '3' },
        body: { error: { message: 'slow down', type: 'rate_limit' } },
      });

      expect(error.retryable).toBe(true);
      expect(error.retryAfterMs).toBe(3000);
      expect(server.requests).toHaveLength(1);
    });
  });

  describe('when the endpoint answers 409', () => {
    it('fails as retryable', async () => {
      const { error } = await failureOf({ status: 409, body: { error: { message: 'lock timeout' } } });

      expect(error.retryable).toBe(true);
    });
  });

  describe('when the endpoint refuses the credentials', () => {
    it('fails as fatal without the API key anywhere in the error', async () => {
      const { error } = await failureOf({
        status: 401,
        body: { error: { message: `Incorrect API key provided: ${API_KEY}`, type: 'invalid_request_error' } },
      });

      expect(error.code).toBe('SB_PIPELINE_FAILED');
      expect(error.retryable).toBe(false);
      expect(error.details).toMatchObject({ status: 401 });
      expect(JSON.stringify({ message: error.message, details: error.details })).not.toContain(API_KEY);
      expect(error.cause).toBeUndefined();
    });
  });

  describe('when nothing listens at base_url', () => {
    it('fails as retryable', async () => {
      const options = OpenAIPipelineOptionsSchema.parse({
        type: 'openai',
        base_url: `${await refusedUrl()}/v1`,
        api_key: API_KEY,
        model: 'gpt-test',
      });
      const pipeline = createOpenAIPipeline('assistant', options, { history: createMemoryHistoryStore() });

      const error = await rejectionOf(pipeline.run(queryOf(['hi']), runContext()));

      expect(isSwitchboardError(error, 'SB_PIPELINE_FAILED')).toBe(true);
      expect((error as SwitchboardError).retryable).toBe(true);
    });
  });

  describe('when the run is aborted before the endpoint answers', () => {
    it('fails with SB_PIPELINE_TIMEOUT, retryable, and keeps no history', async () => {
      const { pipeline, history, server } = await setUp(() => 'hang');
      const context = runContext();
      const query = queryOf(['hi']);
      const running = rejectionOf(pipeline.run(query, context));

      await server.nextRequest();
      context.controller.abort();

      const error = await running;
      expect(isSwitchboardError(error, 'SB_PIPELINE_TIMEOUT')).toBe(true);
      expect((error as SwitchboardError).retryable).toBe(true);
      expect(history.entries(query.session, 'assistant')).toEqual([]);
    });
  });
});

describe('createOpenAIPipeline with stream: true', () => {
  const started: FakeOpenAI[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((fake) => fake.close()));
  });

  /** The options of a streaming pipeline on the endpoint at `baseUrl`. */
  const streamingOptions = (baseUrl: string) =>
    OpenAIPipelineOptionsSchema.parse({
      type: 'openai',
      base_url: baseUrl,
      api_key: API_KEY,
      model: 'gpt-test',
      stream: true,
    });

  async function streaming(answer: FakeOpenAIAnswer) {
    const fake = await startFakeOpenAI(answer);
    started.push(fake);
    const history = createMemoryHistoryStore();
    const options = streamingOptions(fake.baseUrl);
    return { fake, history, pipeline: createOpenAIPipeline('assistant', options, { history }) };
  }

  describe('when the endpoint streams the answer', () => {
    it('passes each piece on in order and answers with their concatenation, kept in the history', async () => {
      const { fake, history, pipeline } = await streaming({ tokens: ['Hel', 'lo', ', ', 'world'] });
      const deltas: string[] = [];
      const context = { ...runContext(), stream: (delta: string) => deltas.push(delta) };

      const result = await pipeline.run(queryOf(['hi']), context);

      expect(fake.requests[0]?.body).toMatchObject({ model: 'gpt-test', stream: true });
      expect(deltas).toEqual(['Hel', 'lo', ', ', 'world']);
      expect(result.replies).toEqual([{ text: 'Hello, world' }]);
      await result.saved;
      expect(history.entries(queryOf(['hi']).session, 'assistant')).toEqual([
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'Hello, world' },
      ]);
    });

    it('still answers whole when the channel shows no previews (no stream callback)', async () => {
      const { pipeline } = await streaming({ tokens: ['a', 'b'] });
      await expect(pipeline.run(queryOf(['hi']), runContext())).resolves.toMatchObject({
        replies: [{ text: 'ab' }],
      });
    });
  });

  describe('when the body ends a while after [DONE]', () => {
    it('reads the rest after the answer, so that later calls reuse the connection', async () => {
      const { fake, pipeline } = await streaming({ tokens: ['a', 'b'], endDelayMs: 50 });

      for (const call of [1, 2, 3, 4, 5, 6]) {
        await expect(pipeline.run(queryOf(['hi']), runContext())).resolves.toMatchObject({
          replies: [{ text: 'ab' }],
        });
        // The turn answers at [DONE]; the next call comes once this body has ended.
        await eventually(() => fake.finished() === call, 5_000, `answer ${call} ended`);
      }

      expect(fake.requests).toHaveLength(6);
      // A body cut at [DONE] would cost a connection per call; one may race its hand-back.
      expect(fake.connections()).toBeLessThanOrEqual(2);
    });
  });

  describe('when the body stays open after [DONE]', () => {
    it('answers at once, without waiting for its end', async () => {
      const { pipeline } = await streaming({ tokens: ['a', 'b'], endDelayMs: 60_000 });

      await expect(pipeline.run(queryOf(['hi']), runContext())).resolves.toMatchObject({
        replies: [{ text: 'ab' }],
      });
    });
  });

  describe('when the run is aborted while the answer streams', () => {
    it('fails with SB_PIPELINE_TIMEOUT at once, retryable, and keeps no history', async () => {
      const { history, pipeline } = await streaming({ tokens: ['a', 'b', 'c'], spacingMs: 60_000 });
      const context = runContext();
      let deltaArrived: () => void = () => {};
      const firstDelta = new Promise<void>((resolve) => {
        deltaArrived = resolve;
      });
      const outcome = rejectionOf(
        pipeline.run(queryOf(['hi']), { ...context, stream: () => deltaArrived() }),
      );

      await firstDelta;
      context.controller.abort();

      const error = await outcome;
      expect(isSwitchboardError(error, 'SB_PIPELINE_TIMEOUT')).toBe(true);
      expect((error as SwitchboardError).retryable).toBe(true);
      expect(history.entries(queryOf(['hi']).session, 'assistant')).toEqual([]);
    });
  });

  describe('when the stream breaks mid-way', () => {
    it('fails retryably, naming the broken stream, and keeps no history', async () => {
      const { history, pipeline } = await streaming({ tokens: ['a', 'b', 'c'], breakAfter: 2 });
      const deltas: string[] = [];
      const error = await rejectionOf(
        pipeline.run(queryOf(['hi']), { ...runContext(), stream: (delta) => deltas.push(delta) }),
      );

      expect(isSwitchboardError(error, 'SB_PIPELINE_FAILED')).toBe(true);
      expect(error).toMatchObject({ retryable: true, message: expect.stringContaining('broken stream') });
      expect(deltas).toEqual(['a', 'b']);
      expect(history.entries(queryOf(['hi']).session, 'assistant')).toEqual([]);
    });
  });

  describe('when the endpoint sends an error event', () => {
    it("fails retryably, quoting the endpoint's error without the API key, and keeps no history", async () => {
      const chunk = (content: string) =>
        `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
      const { pipeline, history } = await setUp(
        () => ({
          status: 200,
          headers: { 'content-type': 'text/event-stream' },
          body: `${chunk('par')}data: ${JSON.stringify({ error: { message: `overloaded for ${API_KEY}` } })}\n\n`,
        }),
        { stream: true },
      );

      const error = await rejectionOf(pipeline.run(queryOf(['hi']), runContext()));

      expect(error).toMatchObject({ code: 'SB_PIPELINE_FAILED', retryable: true });
      expect((error as SwitchboardError).message).toContain(
        'broken stream: the endpoint sent an error: overloaded',
      );
      expect((error as SwitchboardError).message).not.toContain(API_KEY);
      expect(history.entries(queryOf(['hi']).session, 'assistant')).toEqual([]);
    });
  });

  describe('when the endpoint streams chunks far past the largest answer kept', () => {
    const startFloodServer = useFloodServers();

    it('fails for good once the text passes the bound, cuts the connection there and keeps no history', async () => {
      const maxAnswerBytes = 1024 * 1024;
      const chunk = (delta: object, finish: string | null) =>
        `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      // Far more than the bound and any socket buffers: an unbounded reader reads it all.
      const flood = await startFloodServer(
        'text/event-stream',
        chunk({ content: 'x'.repeat(64 * 1024) }, null),
        maxAnswerBytes + 64 * 1024 * 1024,
        `${chunk({}, 'stop')}data: [DONE]\n\n`,
      );
      const history = createMemoryHistoryStore();
      const pipeline = createOpenAIPipeline('assistant', streamingOptions(flood.url), {
        history,
        maxAnswerBytes,
      });
      const streamed = streamCounter();

      const error = await rejectionOf(
        pipeline.run(queryOf(['hi']), { ...runContext(), stream: streamed.stream }),
      );

      expect(error).toMatchObject({
        code: 'SB_PIPELINE_ANSWER_TOO_LARGE',
        retryable: false,
        message: `pipeline assistant: the streamed text is larger than ${maxAnswerBytes} bytes`,
      });
      expect(streamed.characters).toBeLessThanOrEqual(maxAnswerBytes);
      const { written, cut } = await flood.outcome;
      expect(cut).toBe(true);
      // What the gateway read, plus at most what the loopback socket buffers held.
      expect(written).toBeLessThan(maxAnswerBytes + SOCKET_SLACK_BYTES);
      expect(history.entries(queryOf(['hi']).session, 'assistant')).toEqual([]);
    });
  });

  describe('when the endpoint refuses the request', () => {
    it('maps the status as without streaming', async () => {
      const { pipeline } = await streaming({ status: 503 });
      const error = await rejectionOf(pipeline.run(queryOf(['hi']), runContext()));
      expect(error).toMatchObject({ code: 'SB_PIPELINE_FAILED', retryable: true, details: { status: 503 } });
    });
  });
});

describe('OpenAIPipelineOptionsSchema', () => {
  describe('when only the required keys are given', () => {
    it('fills in the documented defaults', () => {
      expect(OpenAIPipelineOptionsSchema.parse({ type: 'openai', api_key: 'k', model: 'm' })).toEqual({
        type: 'openai',
        base_url: 'https://api.openai.com/v1',
        api_key: 'k',
        model: 'm',
        history_turns: 10,
        stream: false,
        vision: false,
      });
    });
  });

  describe('when history_turns is out of range', () => {
    it('refuses it on the history_turns key', () => {
      const result = OpenAIPipelineOptionsSchema.safeParse({
        type: 'openai',
        api_key: 'k',
        model: 'm',
        history_turns: 101,
      });

      expect(result.error?.issues.map((issue) => issue.path)).toEqual([['history_turns']]);
    });
  });
});
