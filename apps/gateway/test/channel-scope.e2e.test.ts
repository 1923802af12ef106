import { randomUUID } from 'node:crypto';
import { readUntil, replyEvents } from '@switchboard/testkit/sse';
import { describe, expect, it } from 'vitest';
import { get, post, serveYaml, useCleanups } from './serve-process.js';

// What one caller of the HTTP API can reach of another's, against a real `switchboard serve`
// over loopback: two HTTP channels, the first with two API keys. A reused Idempotency-Key once
// handed caller B caller A's message and reply, and a message id from one prefix read the
// message of the other.

const cleanup = useCleanups();

const A = { authorization: 'Bearer key-a' };
const B = { authorization: 'Bearer key-b' };
const T2 = { authorization: 'Bearer key-t2' };

function serveTwoChannels() {
  const yaml = `pipelines: [{ id: echo, type: echo }]
routing: { default: echo }
channels:
  - { id: t1, type: openapi, prefix: /t1, api_keys: [key-a, key-b] }
  - { id: t2, type: openapi, prefix: /t2, api_keys: [key-t2] }
`;
  return serveYaml(yaml, { cleanup });
}

describe('what a caller reaches of another caller (end to end)', () => {
  describe('when two callers send the same Idempotency-Key', () => {
    it("gives each its own message; the owner's retry with another body is refused 422", {
      timeout: 60_000,
    }, async () => {
      const gateway = await serveTwoChannels();
      const key = { 'idempotency-key': `order-${randomUUID()}` };
      const first = { session_id: 'sa', user_id: 'alice', text: 'my secret question' };
      const mine = await post(`${gateway.url}/t1/messages`, first, { ...A, ...key });
      expect(mine).toMatchObject({
        status: 200,
        body: { status: 'completed', replies: [{ text: 'my secret question' }] },
      });

      // Another API key of the same channel: its own message, run and answered.
      const theirs = await post(
        `${gateway.url}/t1/messages`,
        { session_id: 'sb', user_id: 'bob', text: 'something else' },
        { ...B, ...key },
      );
      expect(theirs).toMatchObject({
        status: 200,
        body: { status: 'completed', replies: [{ text: 'something else' }] },
      });
      expect(theirs.body?.id).not.toBe(mine.body?.id);
      // Another channel, even with the very same body: its own message too.
      const elsewhere = await post(`${gateway.url}/t2/messages`, first, { ...T2, ...key });
      expect(elsewhere.status).toBe(200);
      expect(elsewhere.body?.id).not.toBe(mine.body?.id);

      // The owner's retry, waiting or not, is the first message again...
      for (const retry of [first, { ...first, wait: false }, { ...first, timeout_ms: 1000 }]) {
        const again = await post(`${gateway.url}/t1/messages`, retry, { ...A, ...key });
        expect(again).toMatchObject({ status: 200, body: { id: mine.body?.id, status: 'completed' } });
      }
      // ...and the key sent with another message is refused, naming the problem.
      const reused = await post(
        `${gateway.url}/t1/messages`,
        { ...first, text: 'a different question' },
        { ...A, ...key },
      );
      expect(reused.status).toBe(422);
      expect(reused.body?.error.code).toBe('SB_IDEMPOTENCY_KEY_REUSED');
      expect(JSON.stringify(reused.body)).not.toContain('my secret question');
    });
  });

  describe("when a channel is asked about another channel's message", () => {
    it('answers 404 as for an unknown id, and streams none of its replies', {
      timeout: 60_000,
    }, async () => {
      const gateway = await serveTwoChannels();
      const session = `s-${randomUUID()}`;
      const abort = new AbortController();
      cleanup(async () => abort.abort());
      const stream = await fetch(`${gateway.url}/t2/sessions/${session}/events`, {
        headers: T2,
        signal: abort.signal,
      });
      const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
      await readUntil(reader, (text) => text.includes(': connected'));

      const secret = await post(
        `${gateway.url}/t1/messages`,
        { session_id: session, user_id: 'alice', text: 'my secret question' },
        A,
      );
      expect(secret.status).toBe(200);
      const id = secret.body?.id as string;
      expect((await get(`${gateway.url}/t1/messages/${id}`, A)).body).toMatchObject({
        id,
        status: 'completed',
      });

      const asked = await get(`${gateway.url}/t2/messages/${id}`, T2);
      const unknownId = '01JUNKNOWN0000000000000000';
      const unknown = await get(`${gateway.url}/t2/messages/${unknownId}`, T2);
      expect(asked.status).toBe(404);
      expect(asked.body).toEqual({
        error: { ...unknown.body?.error, message: unknown.body?.error.message.replace(unknownId, id) },
      });
      expect(JSON.stringify(asked.body)).not.toContain('my secret question');

      // The stream of t2's session of that id sees t2's own reply, sent after t1's, and only it.
      const own = await post(
        `${gateway.url}/t2/messages`,
        { session_id: session, user_id: 'carol', text: 'hello t2' },
        T2,
      );
      const text = await readUntil(reader, (received) => received.includes('event: reply\n'), 10_000);
      expect(replyEvents(text)).toEqual([
        { message_id: own.body?.id, turn: expect.any(String), text: 'hello t2' },
      ]);
      abort.abort();
    });
  });
});
