import { type Logger, type Pipeline, silentLogger } from '@switchboard/core';
import {
  eventNames,
  readUntil,
  replyDeltaEvents,
  replyEvents,
  replyOmittedEvents,
} from '@switchboard/testkit/sse';
import { afterEach, describe, expect, it } from 'vitest';
import type { ErrorBody } from '@switchboard/http';
import { toInboundMessage } from '../src/normalize.js';
import { type Harness, createHarness, eventually } from './harness.js';
import { connectRaw } from './raw-client.js';

/** A logger that keeps its warnings, bindings and message. */
function warningsLogger() {
  const warnings: Array<{ fields: Record<string, unknown>; message: string }> = [];
  const logger: Logger = {
    ...silentLogger,
    warn: (fields, message) => warnings.push({ fields: fields as Record<string, unknown>, message }),
    child: () => logger,
  };
  return { logger, warnings };
}

describe('session event stream', () => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });

  async function listen(): Promise<string> {
    return h.server.listen({ host: '127.0.0.1', port: 0 });
  }

  /** Opens session s1's event stream on `base` and reads until it is connected. */
  async function openS1(base: string) {
    const abort = new AbortController();
    const stream = await fetch(`${base}/v1/sessions/s1/events`, { signal: abort.signal });
    const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
    await readUntil(reader, (text) => text.includes(': connected'));
    return { reader, abort };
  }

  /** Posts `text` to session s1 and resolves the answer once the message ended (`wait: true`). */
  async function postAndWait<T = { id: string; turn: string; status: string }>(
    base: string,
    text: string,
  ): Promise<T> {
    const response = await fetch(`${base}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ session_id: 's1', user_id: 'u1', text, wait: true }),
    });
    return (await response.json()) as T;
  }

  describe('when a reply is sent to the session over real HTTP', () => {
    it('streams it as an `event: reply` with the message id, the turn and the text, and nothing of other sessions', async () => {
      h = await createHarness();
      const base = await listen();
      const abort = new AbortController();
      const stream = await fetch(`${base}/v1/sessions/s1/events`, { signal: abort.signal });
      expect(stream.status).toBe(200);
      expect(stream.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
      await readUntil(reader, (text) => text.includes(': connected'));

      const postTo = async (session: string, text: string) => {
        const response = await fetch(`${base}/v1/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ session_id: session, user_id: 'u1', text }),
        });
        return response.json() as Promise<{ id: string; turn: string }>;
      };
      await postTo('s2', 'for another session');
      const answer = await postTo('s1', 'hello stream');

      const text = await readUntil(reader, (received) => received.includes('event: reply'));
      expect(replyEvents(text)).toEqual([{ message_id: answer.id, turn: answer.turn, text: 'hello stream' }]);
      abort.abort();
    });
  });

  describe('when the pipeline streams its answer', () => {
    it('sends reply.delta events with the text so far in pieces, then the whole reply once; wait: true gets it whole', async () => {
      let release: () => void = () => {};
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      const streaming: Pipeline = {
        id: 'streaming',
        async run(_query, { stream }) {
          stream?.('Hel');
          stream?.('lo');
          await released;
          stream?.(', world');
          return { replies: [{ text: 'Hello, world' }] };
        },
      };
      h = await createHarness({ pipelines: [{ pipeline: streaming }], editIntervalMs: 100 });
      const base = await listen();
      const { reader, abort } = await openS1(base);

      const answered = postAndWait<{ id: string; turn: string; replies: unknown[] }>(base, 'hi');
      let text = await readUntil(reader, (received) => received.includes('event: reply.delta'));
      release();
      text += await readUntil(reader, (received) => received.includes('event: reply\n'));
      const answer = await answered;

      expect(answer.replies).toEqual([{ text: 'Hello, world' }]);
      const names = eventNames(text);
      expect(names.at(-1)).toBe('reply');
      expect(names.slice(0, -1).every((name) => name === 'reply.delta')).toBe(true);
      const deltas = replyDeltaEvents(text) as Array<{ message_id: string; turn: string; delta: string }>;
      expect(deltas[0]).toEqual({ message_id: answer.id, turn: answer.turn, delta: 'Hello' });
      expect('Hello, world'.startsWith(deltas.map((event) => event.delta).join(''))).toBe(true);
      expect(replyEvents(text)).toEqual([{ message_id: answer.id, turn: answer.turn, text: 'Hello, world' }]);
      abort.abort();
    });
  });

  describe('when the stream is idle', () => {
    it('sends heartbeat comments', async () => {
      h = await createHarness({ sseHeartbeatMs: 30 });
      const base = await listen();
      const abort = new AbortController();
      const stream = await fetch(`${base}/v1/sessions/s1/events`, { signal: abort.signal });
      const reader = (stream.body as ReadableStream<Uint8Array>).getReader();

      const text = await readUntil(reader, (received) => received.split(': heartbeat\n\n').length > 2);
      expect(replyEvents(text)).toEqual([]);
      abort.abort();
    });
  });

  describe('when the server closes', () => {
    it('ends open streams instead of waiting for the clients', async () => {
      h = await createHarness();
      const base = await listen();
      const stream = await fetch(`${base}/v1/sessions/s1/events`);
      const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
      await readUntil(reader, (text) => text.includes(': connected'));

      await h.server.close();
      await expect(readUntil(reader, () => false)).rejects.toThrow(/stream ended/);
    });
  });

  describe('when api_keys are configured', () => {
    it('refuses a stream without a key', async () => {
      h = await createHarness({ channel: { api_keys: ['k-one'] } });
      const response = await h.server.inject({ method: 'GET', url: '/v1/sessions/s1/events' });
      expect(response.statusCode).toBe(401);
      expect(response.json().error.code).toBe('SB_HTTP_UNAUTHORIZED');
    });
  });

  describe('when more streams are asked for than max_event_streams_per_session or max_event_streams', () => {
    it('answers 429 with Retry-After past either limit, and accepts again once a stream ends', async () => {
      h = await createHarness({ channel: { max_event_streams_per_session: 1, max_event_streams: 2 } });
      const base = await listen();
      const aborts: AbortController[] = [];
      const open = (session: string) => {
        const abort = new AbortController();
        aborts.push(abort);
        return fetch(`${base}/v1/sessions/${session}/events`, { signal: abort.signal });
      };
      try {
        const first = await open('s1');
        expect(first.status).toBe(200);
        const again = await open('s1');
        expect(again.status).toBe(429);
        expect(again.headers.get('retry-after')).toBe('5');
        expect(((await again.json()) as ErrorBody).error).toMatchObject({
          code: 'SB_HTTP_TOO_MANY_REQUESTS',
          message: expect.stringContaining('max_event_streams_per_session'),
        });
        expect((await open('s2')).status).toBe(200);
        const third = await open('s3');
        expect(third.status).toBe(429);
        expect(((await third.json()) as ErrorBody).error.message).toContain('(max_event_streams)');

        aborts[0]?.abort();
        await eventually(async () => (await open('s1')).status === 200);
      } finally {
        for (const abort of aborts) abort.abort();
      }
    });
  });

  describe('when a reply alone is larger than max_event_stream_buffer and the client reads', () => {
    it('keeps the stream open, sends a reply.omitted event naming the message instead, logs it, and streams later replies', async () => {
      const { logger, warnings } = warningsLogger();
      // 16 MiB: more than the kernel's socket buffers on loopback take at once.
      const hugeText = 'x'.repeat(16 * 1_048_576);
      const sizable: Pipeline = {
        id: 'sizable',
        async run(query) {
          return { replies: [{ text: query.text === 'huge' ? hugeText : query.text }] };
        },
      };
      h = await createHarness({
        channel: { max_event_stream_buffer: 65_536 },
        pipelines: [{ pipeline: sizable }],
        logger,
      });
      const base = await listen();
      const { reader, abort } = await openS1(base);

      const huge = await postAndWait(base, 'huge');
      const after = await postAndWait(base, 'after');
      expect([huge.status, after.status]).toEqual(['completed', 'completed']);

      const text = await readUntil(reader, (received) => received.includes('"after"'), 10_000);
      expect(eventNames(text)).toEqual(['reply.omitted', 'reply']);
      expect(replyOmittedEvents(text)).toEqual([
        { message_id: huge.id, turn: huge.turn, event: 'reply', bytes: expect.any(Number) },
      ]);
      expect(replyEvents(text)).toEqual([{ message_id: after.id, turn: after.turn, text: 'after' }]);
      expect(warnings).toEqual([
        {
          fields: expect.objectContaining({ session: 's1', messageId: huge.id, maxBytes: 65_536 }),
          message: 'event too large for the event streams: sent as reply.omitted',
        },
      ]);
      // The notice's message answers whole by its id.
      const status = await fetch(`${base}/v1/messages/${huge.id}`);
      const { replies } = (await status.json()) as { replies: Array<{ text: string }> };
      expect(replies[0]?.text).toHaveLength(hugeText.length);
      abort.abort();
    });
  });

  describe('when a streamed delta alone is larger than max_event_stream_buffer', () => {
    it('sends reply.omitted naming the message and the event left out, for the delta and for the reply', async () => {
      let release: () => void = () => {};
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      const hugeText = 'y'.repeat(200_000);
      const streaming: Pipeline = {
        id: 'streaming',
        async run(_query, { stream }) {
          stream?.(hugeText);
          await released;
          return { replies: [{ text: hugeText }] };
        },
      };
      h = await createHarness({
        channel: { max_event_stream_buffer: 65_536 },
        pipelines: [{ pipeline: streaming }],
        editIntervalMs: 100,
      });
      const base = await listen();
      const { reader, abort } = await openS1(base);

      const answered = postAndWait(base, 'hi');
      let text = await readUntil(reader, (received) => received.includes('event: reply.omitted'), 10_000);
      release();
      const answer = await answered;
      text += await readUntil(reader, (received) => received.includes('"event":"reply"'), 10_000);

      expect(eventNames(text)).toEqual(['reply.omitted', 'reply.omitted']);
      expect(replyOmittedEvents(text)).toEqual([
        { message_id: answer.id, turn: answer.turn, event: 'reply.delta', bytes: expect.any(Number) },
        { message_id: answer.id, turn: answer.turn, event: 'reply', bytes: expect.any(Number) },
      ]);
      abort.abort();
    });
  });

  describe('when a client opens a stream and never reads it', () => {
    it('disconnects it once max_event_stream_buffer bytes wait unsent, logs it, and frees its place', async () => {
      const { logger, warnings } = warningsLogger();
      h = await createHarness({
        channel: { max_event_streams_per_session: 1, max_event_stream_buffer: 1_048_576 },
        logger,
      });
      const base = await listen();
      const reader = await connectRaw(base, { read: false });
      await reader.write('GET /v1/sessions/s1/events HTTP/1.1\r\nHost: test\r\n\r\n');
      const abort = new AbortController();
      const openStream = () => fetch(`${base}/v1/sessions/s1/events`, { signal: abort.signal });
      // Its stream is open once the session has no place left.
      await eventually(async () => (await openStream()).status === 429);

      const origin = toInboundMessage(
        { session_id: 's1', user_id: 'u1', text: 'hi', chat_type: 'person', wait: false },
        { id: 'm1', channelId: 'api', receivedAt: 0 },
      );
      // Below the limit each, so that it is sent whole and only the backlog can cut the stream.
      const reply = { text: 'x'.repeat(1_000_000) };
      let next: Response | undefined;
      // 64 MB at most, far past the limit and the kernel's buffers: the stream must lose its place.
      for (let sent = 0; sent < 64 && next === undefined; sent++) {
        await h.channel.send(origin, [reply], new AbortController().signal);
        const attempt = await openStream();
        if (attempt.status === 200) next = attempt;
      }
      expect(next?.status).toBe(200);
      expect(warnings).toContainEqual({
        fields: expect.objectContaining({ session: 's1', maxBytes: 1_048_576 }),
        message: 'event stream disconnected: its reader is too slow',
      });
      abort.abort();
      // A client that does not read sees no close either; once it reads, it finds its stream cut.
      reader.socket.resume();
      await reader.closed;
      abort.abort();
    });
  });

  describe('when readers that do not read together hold more than max_event_stream_buffer_total', () => {
    it('disconnects the stream holding most, though each is far below max_event_stream_buffer, and logs it', async () => {
      const { logger, warnings } = warningsLogger();
      h = await createHarness({
        channel: {
          max_event_streams_per_session: 1,
          max_event_stream_buffer: 268_435_456,
          max_event_stream_buffer_total: 65_536,
        },
        logger,
      });
      const base = await listen();
      const abort = new AbortController();
      const openStream = (session: string) =>
        fetch(`${base}/v1/sessions/${session}/events`, { signal: abort.signal });
      const readers = [];
      for (const session of ['s1', 's2']) {
        const reader = await connectRaw(base, { read: false });
        await reader.write(`GET /v1/sessions/${session}/events HTTP/1.1\r\nHost: test\r\n\r\n`);
        await eventually(async () => (await openStream(session)).status === 429);
        readers.push(reader);
      }

      const origin = (session: string) =>
        toInboundMessage(
          { session_id: session, user_id: 'u1', text: 'hi', chat_type: 'person', wait: false },
          { id: `m-${session}`, channelId: 'api', receivedAt: 0 },
        );
      const reply = { text: 'x'.repeat(262_144) };
      let freed: string | undefined;
      // 16 MB at most, under a 256 MiB limit per stream: only the total can cut a stream.
      for (let sent = 0; sent < 64 && freed === undefined; sent++) {
        await h.channel.send(origin('s1'), [reply], new AbortController().signal);
        if ((await openStream('s1')).status === 200) freed = 's1';
      }
      expect(freed).toBe('s1');
      expect(warnings).toContainEqual({
        fields: expect.objectContaining({ session: 's1', maxTotalBytes: 65_536 }),
        message: 'event stream disconnected: the streams hold too much unsent',
      });
      // The other reader held less, so it keeps its place.
      expect((await openStream('s2')).status).toBe(429);
      abort.abort();
      readers[0]?.socket.resume();
      await readers[0]?.closed;
      readers[1]?.socket.destroy();
    });
  });

  describe('when this replica sends an answer for a message another replica follows', () => {
    const origin = toInboundMessage(
      { session_id: 's1', user_id: 'u1', text: 'hello', chat_type: 'person', wait: false },
      { id: '01JSSEREPLAY00000000000001', channelId: 'api', receivedAt: 0 },
    );

    it("streams a turn's answer with its turn without reading the status store", async () => {
      h = await createHarness();
      const { reader, abort } = await openS1(await listen());
      h.statuses.get = () => Promise.reject(new Error('PostgreSQL is away'));
      await h.channel.send(origin, [{ text: 'answer' }], new AbortController().signal, {
        turn: 't-new',
        answer: true,
      });
      const text = await readUntil(reader, (received) => received.includes('event: reply'));
      expect(replyEvents(text)).toEqual([{ message_id: origin.id, turn: 't-new', text: 'answer' }]);
      abort.abort();
    });

    it("streams a replayed dead letter's answer, which names no turn, with the turn its stored status names", async () => {
      h = await createHarness();
      const { reader, abort } = await openS1(await listen());
      await h.statuses.put({
        id: origin.id,
        channel: 'api',
        tenant: 'default',
        generation: 0,
        status: 'dead_lettered',
        pipeline: 'echo',
        rule: null,
        turn: 't-old',
        replies: [],
        delivery: 'failed',
        error: 'SB_CHANNEL_SEND_FAILED: gone',
        trace_id: null,
        updated_at: 1,
      });
      await h.channel.send(origin, [{ text: 'again' }], new AbortController().signal, { answer: true });
      const text = await readUntil(reader, (received) => received.includes('event: reply'));
      expect(replyEvents(text)).toEqual([{ message_id: origin.id, turn: 't-old', text: 'again' }]);
      abort.abort();
    });
  });
  describe('when a send is given the commit that stores its delivery', () => {
    const origin = toInboundMessage(
      { session_id: 's1', user_id: 'u1', text: 'hello', chat_type: 'person', wait: false },
      { id: '01JSSECOMMIT0000000000001', channelId: 'api', receivedAt: 0 },
    );

    it('streams the replies only once it committed, and never when it failed', async () => {
      h = await createHarness();
      const { reader, abort } = await openS1(await listen());
      let commit: (stored: boolean) => void = () => {};
      const committed = new Promise<boolean>((resolve) => {
        commit = resolve;
      });
      await h.channel.send(origin, [{ text: 'stored' }], new AbortController().signal, {
        turn: 't1',
        committed,
      });
      await h.channel.send(origin, [{ text: 'lost' }], new AbortController().signal, {
        turn: 't1',
        committed: Promise.resolve(false),
      });
      // Sent without a commit to wait for: streamed at once, ahead of the one waiting.
      await h.channel.send(origin, [{ text: 'now' }], new AbortController().signal, { turn: 't1' });
      commit(true);
      const text = await readUntil(reader, (received) => received.includes('"stored"'));
      expect(replyEvents(text)).toEqual([
        { message_id: origin.id, turn: 't1', text: 'now' },
        { message_id: origin.id, turn: 't1', text: 'stored' },
      ]);
      abort.abort();
    });
  });
});
