import { type FakeFeishu, startFakeFeishu } from '@switchboard/testkit/feishu';
import { type FakeOpenAI, numberedTokens, startFakeOpenAI } from '@switchboard/testkit/openai';
import { metricValueAt } from '@switchboard/testkit/prometheus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServeProcess, eventually, get, serveYaml } from './serve-process.js';

/** Feishu's text limit as the channel cuts it (`MAX_TEXT_CHARS`). */
const LIMIT = 30_000;
/** 60 tokens 25 ms apart: a 1.5 s answer, previewed at most once a second. */
const TOKENS = numberedTokens(60);

describe('feishu channel (end to end)', () => {
  let fake: FakeFeishu;
  let openai: FakeOpenAI;
  let gateway: ServeProcess;
  let webhookUrl: string;

  /** Counts of the channel's outcomes, as /metrics has them. */
  const outcomes = (outcome: string) =>
    metricValueAt(gateway.url, `switchboard_messages_total{channel="fs",outcome="${outcome}"}`);

  beforeAll(async () => {
    [fake, openai] = await Promise.all([
      startFakeFeishu(),
      startFakeOpenAI({ tokens: TOKENS, spacingMs: 25 }),
    ]);
    gateway = await serveYaml(`
audit: { ignored: true }
channels:
  - id: fs
    type: feishu
    app_id: ${fake.appId}
    app_secret: ${fake.appSecret}
    encrypt_key: ${fake.encryptKey}
    verification_token: ${fake.verificationToken}
    domain: "${fake.url}"
pipelines:
  - { id: echo, type: echo }
  - { id: llm, type: openai, base_url: "${openai.baseUrl}", api_key: sk-test, model: gpt-test, stream: true, history_turns: 0 }
routing:
  default: echo
  rules:
    - { name: stream, type: message_content, operator: starts_with, value: stream, pipeline: llm }
`);
    webhookUrl = `${gateway.url}/feishu/fs`;
  }, 60_000);
  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await Promise.all([fake?.close(), openai?.close()]);
  });

  describe('when the gateway starts', () => {
    it("learns the bot's open_id with a tenant token and reports the channel ready", async () => {
      expect(fake.callsTo('token')).toHaveLength(1);
      expect(fake.callsTo('bot_info').map((call) => call.status)).toEqual([200]);
      expect((await get(`${gateway.url}/readyz`)).status).toBe(200);
    });
  });

  describe('when the console checks the URL', () => {
    it('answers the encrypted url_verification with its challenge', async () => {
      const answer = await fake.verifyUrl(webhookUrl);
      expect(answer).toMatchObject({ status: 200, body: { challenge: answer.challenge } });
    });
  });

  describe('when an event is not signed with the encrypt key', () => {
    it('answers 401 and answers nothing', async () => {
      const event = fake.messageEvent({ text: 'forged', chatId: 'oc_forged' });
      const answer = await fake.deliverEvent(webhookUrl, event, { signature: 'f'.repeat(64) });
      expect(answer.status).toBe(401);
      expect(answer.body).toMatchObject({ error: { code: 'SB_HTTP_UNAUTHORIZED' } });
      expect(fake.shownIn('oc_forged')).toEqual([]);
    });
  });

  describe('when a user writes to the bot one to one', () => {
    it('answers through the echo pipeline with the reply API', async () => {
      const event = fake.messageEvent({ text: 'hello feishu', chatId: 'oc_p2p_alice' });
      expect((await fake.deliverEvent(webhookUrl, event)).status).toBe(200);
      expect(await fake.waitForShown('oc_p2p_alice', 1)).toEqual(['hello feishu']);
      const reply = fake.callsTo('reply').find((call) => call.chatId === 'oc_p2p_alice');
      expect(reply?.messageId).toBe(event.event.message.message_id);
    });
  });

  describe('when Feishu delivers the same event twice', () => {
    it('answers once', async () => {
      const event = fake.messageEvent({ text: 'only once', chatId: 'oc_p2p_twice' });
      const duplicatesBefore = await outcomes('duplicate');
      expect((await fake.deliverEvent(webhookUrl, event)).status).toBe(200);
      expect((await fake.deliverEvent(webhookUrl, event)).status).toBe(200);
      await eventually(async () => (await outcomes('duplicate')) === duplicatesBefore + 1);
      expect(await fake.waitForShown('oc_p2p_twice', 1)).toEqual(['only once']);
      expect(fake.callsTo('reply').filter((call) => call.chatId === 'oc_p2p_twice')).toHaveLength(1);
    });
  });

  describe('when a group writes', () => {
    it('answers the mention of the bot and ignores the rest', async () => {
      const chatId = 'oc_group_team';
      await fake.deliverEvent(
        webhookUrl,
        fake.messageEvent({ text: 'just chatting', chatType: 'group', chatId }),
      );
      await fake.deliverEvent(
        webhookUrl,
        fake.messageEvent({ text: 'ping', chatType: 'group', chatId, mentionBot: true }),
      );
      expect(await fake.waitForShown(chatId, 1)).toEqual(['@Switchboard ping']);
      const audit = await get(`${gateway.url}/admin/audit?outcome=ignored&channel=fs`);
      expect(audit.body.items).toContainEqual(
        expect.objectContaining({ reason: 'not_mentioned', chat_id: chatId, platform: 'feishu' }),
      );
      expect(fake.shownIn(chatId)).toEqual(['@Switchboard ping']);
    });
  });

  describe("when the bot's own message comes back as an event", () => {
    it('ignores it', async () => {
      const chatId = 'oc_p2p_own';
      const event = fake.messageEvent({
        text: 'mine',
        chatId,
        senderOpenId: fake.botOpenId,
        senderType: 'app',
      });
      expect((await fake.deliverEvent(webhookUrl, event)).status).toBe(200);
      await eventually(async () => {
        const audit = await get(`${gateway.url}/admin/audit?outcome=ignored&channel=fs`);
        return audit.body.items.some(
          (item: { reason?: string; chat_id?: string }) =>
            item.reason === 'bot_author' && item.chat_id === chatId,
        );
      });
      expect(fake.callsTo('reply').filter((call) => call.chatId === chatId)).toEqual([]);
    });
  });

  describe('when Feishu answers a reply with its rate limit', () => {
    it('delivers the reply later, once', async () => {
      const chatId = 'oc_p2p_busy';
      fake.failNext('reply', 1, { kind: 'rate_limited', resetSeconds: 1 });
      await fake.deliverEvent(webhookUrl, fake.messageEvent({ text: 'busy', chatId }));
      expect(await fake.waitForShown(chatId, 1, 10_000)).toEqual(['busy']);
      const replies = fake.callsTo('reply').filter((call) => call.chatId === chatId);
      expect(replies.map((call) => call.status)).toEqual([429, 200]);
      expect((replies[1]?.at ?? 0) - (replies[0]?.at ?? 0)).toBeGreaterThanOrEqual(1_000);
      expect(fake.shownIn(chatId)).toEqual(['busy']);
    });
  });

  describe('when a reply is longer than one Feishu message', () => {
    it('sends it split at the limit, in order', async () => {
      const chatId = 'oc_p2p_long';
      const text = `${'a'.repeat(LIMIT)}${'b'.repeat(LIMIT)}ccc`;
      await fake.deliverEvent(webhookUrl, fake.messageEvent({ text, chatId }));
      expect(await fake.waitForShown(chatId, 3)).toEqual(['a'.repeat(LIMIT), 'b'.repeat(LIMIT), 'ccc']);
    });
  });

  describe('when the pipeline streams its answer', () => {
    it('shows one message, edited at most once a second, ending as the whole answer', async () => {
      const chatId = 'oc_p2p_stream';
      await fake.deliverEvent(webhookUrl, fake.messageEvent({ text: 'stream please', chatId }));
      const answer = TOKENS.join('');
      await eventually(() => fake.shownIn(chatId).at(-1) === answer, 20_000);
      const messages = fake.botMessages().filter((message) => message.chatId === chatId);
      expect(messages).toHaveLength(1);
      expect(messages[0]?.texts.length).toBeGreaterThanOrEqual(2);
      const arrivals = fake.calls.filter((call) => call.chatId === chatId).map((call) => call.at);
      for (let index = 1; index < arrivals.length; index += 1) {
        expect((arrivals[index] ?? 0) - (arrivals[index - 1] ?? 0)).toBeGreaterThanOrEqual(950);
      }
    }, 30_000);
  });
});

describe('feishu channel in websocket mode (end to end)', () => {
  let fake: FakeFeishu;
  let gateway: ServeProcess;

  beforeAll(async () => {
    fake = await startFakeFeishu();
    // No encrypt key, no verification token, no public URL: the gateway connects out.
    gateway = await serveYaml(`
audit: { ignored: true }
channels:
  - id: fs
    type: feishu
    mode: websocket
    app_id: ${fake.appId}
    app_secret: ${fake.appSecret}
    domain: "${fake.url}"
pipelines:
  - { id: echo, type: echo }
routing:
  default: echo
`);
  }, 60_000);
  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await fake?.close();
  });

  describe('when the gateway starts', () => {
    it('opens the long connection, reports ready once it is open, and mounts no webhook', async () => {
      await fake.longConnection.waitForConnections(1, 10_000);
      await eventually(async () => (await get(`${gateway.url}/readyz`)).status === 200, 10_000);
      expect((await fetch(`${gateway.url}/feishu/fs`, { method: 'POST', body: '{}' })).status).toBe(404);
    });
  });

  describe('when a user writes to the bot one to one', () => {
    it('acknowledges the event over the connection and answers with the reply API', async () => {
      const event = fake.messageEvent({ text: 'hello over the socket', chatId: 'oc_p2p_ws' });
      expect((await fake.longConnection.deliver(event)).code).toBe(200);
      expect(await fake.waitForShown('oc_p2p_ws', 1)).toEqual(['hello over the socket']);
      expect(fake.callsTo('reply').find((call) => call.chatId === 'oc_p2p_ws')?.messageId).toBe(
        event.event.message.message_id,
      );
    });
  });

  describe('when the SDK logs', () => {
    it('goes through the gateway log, never showing the app secret', () => {
      expect(gateway.stderr.join('')).not.toContain('[ws]');
      const lines = JSON.stringify(gateway.logs);
      expect(lines).toContain('feishu long connection open');
      expect(lines).not.toContain(fake.appSecret);
    });
  });
});
