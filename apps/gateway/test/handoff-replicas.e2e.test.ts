import { randomUUID } from 'node:crypto';
import { postgresReachable } from '@switchboard/testkit/postgres';
import { redisReachable } from '@switchboard/testkit/redis';
import { readUntil, replyEvents } from '@switchboard/testkit/sse';
import { describe, expect, it } from 'vitest';
import { startFakePipeline } from './fake-pipeline.js';
import { serveOn, sharedStores } from './shared-stores.js';
import { eventually, get, post, useCleanups } from './serve-process.js';

const cleanup = useCleanups();
const reachable = (await redisReachable()) && (await postgresReachable());

async function send(method: string, url: string, body: unknown) {
  const response = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe.skipIf(!reachable)('human handoff with store: redis (two replicas)', () => {
  it('holds on replica B the messages of a session taken over on A, and sends the replies A takes', {
    timeout: 90_000,
  }, async () => {
    const backend = await startFakePipeline();
    cleanup(() => backend.close());
    const stores = sharedStores(cleanup);
    const pipeline = { id: 'bot', yaml: `{ id: bot, type: http, url: "${backend.url}" }` };
    const a = await serveOn(cleanup, stores, '', pipeline);
    const b = await serveOn(cleanup, stores, '', pipeline);
    const chat = `s-${randomUUID()}`;
    const key = encodeURIComponent(`openapi:api:person:${chat}`);

    const taken = await send('POST', `${a.url}/admin/sessions/${key}/handoff`, { reason: 'vip' });
    expect(taken.status).toBe(201);

    const abort = new AbortController();
    cleanup(async () => abort.abort());
    const stream = await fetch(`${b.url}/v1/sessions/${chat}/events`, { signal: abort.signal });
    const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
    await readUntil(reader, (text) => text.includes(': connected'));

    const accepted = [];
    for (const text of ['first', 'second', 'third'])
      accepted.push(await post(`${b.url}/v1/messages`, { session_id: chat, user_id: 'u1', text }));
    // The channel waits for each message's end: held, wherever its turn was claimed.
    expect(accepted.map((answer) => [answer.status, answer.body?.status])).toEqual(
      Array.from({ length: 3 }, () => [200, 'handed_off']),
    );
    for (const answer of accepted)
      expect((await get(`${a.url}/v1/messages/${answer.body?.id}`)).body.status).toBe('handed_off');
    const view = await get(`${a.url}/admin/sessions/${key}`);
    expect(view.body.transcript.map((entry: { text: string }) => entry.text)).toEqual([
      'first',
      'second',
      'third',
    ]);
    expect(backend.requests).toHaveLength(0);
    const inbox = await get(`${b.url}/admin/handoffs`);
    expect(inbox.body.items).toEqual([
      expect.objectContaining({ held: 3, unread: 3, channel: 'api', chat_id: chat }),
    ]);

    const replied = await send('POST', `${a.url}/admin/sessions/${key}/replies`, {
      text: 'A person will help you.',
    });
    expect(replied.status).toBe(202);
    const received = await readUntil(reader, (text) => replyEvents(text).length === 1, 10_000);
    expect((replyEvents(received) as Array<{ text: string }>).map((event) => event.text)).toEqual([
      'A person will help you.',
    ]);

    const ended = await send('DELETE', `${b.url}/admin/sessions/${key}/handoff`, { resume: 'bot' });
    expect(ended.body).toMatchObject({ resumed: 'bot', held: 3 });
    await eventually(() => backend.requests.length === 1);
    expect(backend.requests[0]?.text).toBe('first\nsecond\nthird');
    const next = await readUntil(reader, (text) => replyEvents(text).length === 1, 10_000);
    expect((replyEvents(next) as Array<{ text: string }>).map((event) => event.text)).toEqual([
      'echo: first\nsecond\nthird',
    ]);
    abort.abort();
  });
});
