import { afterEach, describe, expect, it } from 'vitest';
import { type Harness, createHarness } from './harness.js';

/** Reads a fetch body as text until `done(text)` holds; fails after `timeoutMs`. */
async function readUntil(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  done: (text: string) => boolean,
  timeoutMs = 2000,
): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  const deadline = setTimeout(() => void reader.cancel(), timeoutMs);
  try {
    while (!done(text)) {
      const chunk = await reader.read();
      if (chunk.done) throw new Error(`stream ended before the expected data; got:\n${text}`);
      text += decoder.decode(chunk.value, { stream: true });
    }
    return text;
  } finally {
    clearTimeout(deadline);
  }
}

function replyEvents(text: string): unknown[] {
  return text
    .split('\n\n')
    .filter((block) => block.startsWith('event: reply\n'))
    .map((block) => JSON.parse(block.slice(block.indexOf('data: ') + 'data: '.length)));
}

describe('session event stream', () => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });

  async function listen(): Promise<string> {
    return h.server.listen({ host: '127.0.0.1', port: 0 });
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
});
