import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type FakeDiscord, startFakeDiscord } from '@switchboard/testkit/discord';
import { type FakeOpenAI, numberedTokens, startFakeOpenAI } from '@switchboard/testkit/openai';
import {
  type FakeSlack,
  eventEnvelope,
  messageEvent,
  sendEvent,
  startFakeSlack,
} from '@switchboard/testkit/slack';
import { eventNames, readUntil, replyDeltaEvents, replyEvents } from '@switchboard/testkit/sse';
import { type FakeTelegram, startFakeTelegram } from '@switchboard/testkit/telegram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServeProcess, eventually, get, post, serveYaml } from './serve-process.js';

// 200 tokens over 4 s (docs/design.md §4 "Streaming"): each channel must show one message, edited
// at most once a second, whose last text is the whole answer.
const TOKENS = numberedTokens(200);
const ANSWER = TOKENS.join('');
const SPACING_MS = 20;

/** Edits as (time, text): at most 5, at least 1 s apart, the last one the whole answer. */
function expectPacedEdits(edits: Array<{ at: number; text: string }>) {
  expect(edits.length).toBeGreaterThan(0);
  expect(edits.length).toBeLessThanOrEqual(5);
  for (let i = 1; i < edits.length; i++) {
    expect((edits[i]?.at ?? 0) - (edits[i - 1]?.at ?? 0)).toBeGreaterThanOrEqual(1_000);
  }
  expect(edits.at(-1)?.text).toBe(ANSWER);
}

/** An http pipeline backend answering NDJSON: two deltas, then the replies. */
async function startNdjsonBackend() {
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/x-ndjson' });
    response.write(`${JSON.stringify({ delta: 'stre' })}\n`);
    setTimeout(() => {
      response.write(`${JSON.stringify({ delta: 'amed' })}\n`);
      response.end(`${JSON.stringify({ replies: [{ text: 'streamed' }] })}\n`);
    }, 300);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/answer`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The largest answer a pipeline keeps (packages/pipelines `MAX_ANSWER_BYTES`). */
const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

/**
 * An http pipeline backend streaming NDJSON deltas of 64 KiB as fast as the gateway reads, far
 * past the largest answer kept, until the gateway closes the connection: `written` counts what
 * its socket took before that (or before it ran out and ended with the replies).
 */
async function startFloodBackend() {
  const line = `${JSON.stringify({ delta: 'x'.repeat(64 * 1024) })}\n`;
  const ceilingBytes = MAX_ANSWER_BYTES + 64 * 1024 * 1024;
  const outcomes: Array<{ written: number; cut: boolean }> = [];
  const server = createServer((_request, response) => {
    const outcome = { written: 0, cut: true };
    response.writeHead(200, { 'content-type': 'application/x-ndjson' });
    response.once('close', () => outcomes.push(outcome));
    const pump = (): void => {
      if (outcome.written >= ceilingBytes) {
        response.end(`${JSON.stringify({ replies: [{ text: 'read to the end' }] })}\n`, () => {
          outcome.cut = false;
        });
        return;
      }
      response.write(line, (error) => {
        if (error) return;
        outcome.written += line.length;
        pump();
      });
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/answer`,
    outcomes,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('streamed answers (end to end)', () => {
  let openai: FakeOpenAI;
  let flaky: FakeOpenAI;
  let telegram: FakeTelegram;
  let slack: FakeSlack;
  let discord: FakeDiscord;
  let ndjson: Awaited<ReturnType<typeof startNdjsonBackend>>;
  let flood: Awaited<ReturnType<typeof startFloodBackend>>;
  let gateway: ServeProcess;

  beforeAll(async () => {
    [openai, flaky, telegram, slack, discord, ndjson, flood] = await Promise.all([
      startFakeOpenAI({ tokens: TOKENS, spacingMs: SPACING_MS }),
      startFakeOpenAI({ tokens: ['never ', 'whole'], breakAfter: 1 }),
      startFakeTelegram(),
      startFakeSlack(),
      startFakeDiscord(),
      startNdjsonBackend(),
      startFloodBackend(),
    ]);
    const yaml = `
audit: { ignored: true }
channels:
  - { id: api, type: openapi }
  - { id: tg, type: telegram, token: "${telegram.token}", mode: polling, api_root: "${telegram.url}" }
  - { id: sl, type: slack, bot_token: xoxb-test, signing_secret: secret, api_url: "${slack.apiUrl}" }
  - { id: dc, type: discord, token: "${discord.token}", api_url: "${discord.url}" }
pipelines:
  - { id: llm, type: openai, base_url: "${openai.baseUrl}", api_key: sk-test, model: gpt-test, stream: true, history_turns: 0 }
  - id: flaky
    type: openai
    base_url: "${flaky.baseUrl}"
    api_key: sk-test
    model: gpt-test
    stream: true
    history_turns: 0
    retry: { base_delay: 200ms, max_delay: 200ms }
  - { id: backend, type: http, url: "${ndjson.url}" }
  - id: flood
    type: http
    url: "${flood.url}"
    retry: { max_attempts: 3, base_delay: 200ms, max_delay: 200ms }
routing:
  default: llm
  rules:
    - { name: flood, type: launcher_id, operator: starts_with, value: flood-, pipeline: flood }
    - { name: ndjson, type: launcher_id, operator: starts_with, value: ndjson-, pipeline: backend }
    - { name: flaky, type: launcher_id, operator: starts_with, value: flaky-, pipeline: flaky }
`;
    gateway = await serveYaml(yaml);
  }, 60_000);
  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await Promise.all([openai, flaky, telegram, slack, discord, ndjson, flood].map((fake) => fake?.close()));
  });

  describe('when an OpenAI-compatible endpoint streams 200 tokens over 4 s', () => {
    it('telegram: one message, edited at most 5 times at least 1 s apart, ending as the whole answer', async () => {
      const chat = { id: 515_000_001, first_name: 'Alice', type: 'private' };
      telegram.pushUpdate({
        message: telegram.message({
          from: { id: chat.id, is_bot: false, first_name: 'Alice' },
          chat,
          text: 'hi',
        }),
      });
      const sent = await eventually(() => {
        const messages = telegram.sentMessages().filter((entry) => entry.body.chat_id === chat.id);
        const id = messages[0]?.message.message_id as number | undefined;
        return id !== undefined && telegram.textOf(chat.id, id) === ANSWER && messages;
      }, 20_000);
      expect(sent).toHaveLength(1);
      expectPacedEdits(telegram.edits().filter((edit) => edit.chatId === String(chat.id)));
    }, 30_000);

    it('slack: one message, updated at most 5 times at least 1 s apart, ending as the whole answer', async () => {
      const event = messageEvent({ channel: 'D0STREAM', text: 'hi' });
      expect(
        (await sendEvent(gateway.url, 'sl', eventEnvelope(event), { signingSecret: 'secret' })).status,
      ).toBe(200);
      const posted = await eventually(() => {
        const posts = slack.callsTo('chat.postMessage').filter((call) => call.body.channel === 'D0STREAM');
        const edits = slack.edits().filter((edit) => edit.channel === 'D0STREAM');
        return edits.at(-1)?.text === ANSWER && posts;
      }, 20_000);
      expect(posted).toHaveLength(1);
      expectPacedEdits(slack.edits().filter((edit) => edit.channel === 'D0STREAM'));
    }, 30_000);

    it('discord: one message, edited at most 5 times at least 1 s apart, ending as the whole answer', async () => {
      const DM = '1240000000000000055';
      await eventually(() => discord.connected(), 20_000);
      discord.messageCreate({
        channel_id: DM,
        channel_type: 1,
        author: { id: '234567890123456789', username: 'alice' },
        content: 'hi',
      });
      const sent = await eventually(() => {
        const messages = discord.sentMessages().filter((message) => message.channelId === DM);
        const edits = discord.edits().filter((edit) => edit.channelId === DM);
        return edits.at(-1)?.content === ANSWER && messages;
      }, 20_000);
      expect(sent).toHaveLength(1);
      expectPacedEdits(
        discord
          .edits()
          .filter((edit) => edit.channelId === DM)
          .map((edit) => ({ at: edit.at, text: edit.content })),
      );
    }, 30_000);

    it('HTTP channel: the session stream carries reply.delta events, then the reply; wait: true gets it whole', async () => {
      const abort = new AbortController();
      const stream = await fetch(`${gateway.url}/v1/sessions/sse-1/events`, { signal: abort.signal });
      const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
      await readUntil(reader, (text) => text.includes(': connected'));
      const answered = post(`${gateway.url}/v1/messages`, { session_id: 'sse-1', user_id: 'u1', text: 'hi' });
      const text = await readUntil(reader, (received) => received.includes('event: reply\n'), 20_000);
      abort.abort();
      const answer = (await answered).body as { id: string; replies: unknown[] };

      expect(answer.replies).toEqual([{ text: ANSWER }]);
      const names = eventNames(text);
      expect(names.filter((name) => name === 'reply.delta').length).toBeGreaterThan(1);
      expect(names.at(-1)).toBe('reply');
      const deltas = (replyDeltaEvents(text) as Array<{ message_id: string; delta: string }>).map(
        (event) => event.delta,
      );
      expect(ANSWER.startsWith(deltas.join(''))).toBe(true);
      expect(replyEvents(text)).toEqual([expect.objectContaining({ message_id: answer.id, text: ANSWER })]);
    }, 30_000);
  });

  describe('when an http backend answers NDJSON', () => {
    it('streams its deltas to the session and answers with its final replies', async () => {
      const abort = new AbortController();
      const stream = await fetch(`${gateway.url}/v1/sessions/ndjson-1/events`, { signal: abort.signal });
      const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
      await readUntil(reader, (text) => text.includes(': connected'));
      const answered = post(`${gateway.url}/v1/messages`, {
        session_id: 'ndjson-1',
        user_id: 'u1',
        text: 'hi',
      });
      const text = await readUntil(reader, (received) => received.includes('event: reply\n'), 10_000);
      abort.abort();

      expect((await answered).body).toMatchObject({ status: 'completed', replies: [{ text: 'streamed' }] });
      expect(replyDeltaEvents(text)).toContainEqual(expect.objectContaining({ delta: 'stre' }));
      expect(eventNames(text).at(-1)).toBe('reply');
    }, 20_000);
  });

  describe('when the stream breaks mid-answer', () => {
    it('fails the turn retryably and the retry answers whole', async () => {
      const first = await post(`${gateway.url}/v1/messages`, {
        session_id: 'flaky-1',
        user_id: 'u1',
        text: 'hi',
        wait: false,
      });
      const id = (first.body as { id: string }).id;
      await eventually(() => flaky.requests.length >= 1);
      flaky.answerWith({ tokens: ['whole ', 'answer'] });
      const done = await eventually(async () => {
        const { body } = await get(`${gateway.url}/v1/messages/${id}`);
        return (body as { status: string }).status === 'completed' && (body as { replies: unknown[] });
      }, 15_000);
      expect(done.replies).toEqual([{ text: 'whole answer' }]);
      expect(flaky.requests).toHaveLength(2);
      expect(
        gateway.logs.some(
          (line) =>
            line.msg === 'turn failed, retrying' &&
            String((line.err as { message?: string } | undefined)?.message).includes('broken stream'),
        ),
      ).toBe(true);
    }, 30_000);
  });

  describe('when an http backend streams deltas far past the largest answer kept', () => {
    it('dead-letters the message once, without a retry, and cuts the backend soon after the bound', async () => {
      const answer = await post(`${gateway.url}/v1/messages`, {
        session_id: 'flood-1',
        user_id: 'u1',
        text: 'hi',
        timeout_ms: 30_000,
      });

      expect(answer.body).toMatchObject({ status: 'dead_lettered', reason: 'fatal_error' });
      const id = (answer.body as { id: string }).id;
      // One request (a fatal failure is not retried), cut by the gateway soon after the bound:
      // what it read, plus at most what the loopback socket buffers held.
      const [outcome, ...more] = await eventually(() => flood.outcomes.length > 0 && flood.outcomes);
      expect(more).toEqual([]);
      expect(outcome).toMatchObject({ cut: true });
      expect(outcome?.written).toBeLessThan(MAX_ANSWER_BYTES + 8 * 1024 * 1024);
      const records = await eventually(async () => {
        const { body } = await get(`${gateway.url}/admin/audit?since=1h&limit=1000`);
        const items = (body as { items: Array<{ message_id: string }> }).items;
        const ofMessage = items.filter((item) => item.message_id === id);
        return ofMessage.length > 0 && ofMessage;
      });
      expect(records).toEqual([
        expect.objectContaining({
          message_id: id,
          outcome: 'dead_lettered',
          error: expect.stringContaining(
            `SB_PIPELINE_ANSWER_TOO_LARGE: pipeline flood: the streamed text is larger than ${MAX_ANSWER_BYTES} bytes`,
          ),
        }),
      ]);
    }, 60_000);
  });
});
