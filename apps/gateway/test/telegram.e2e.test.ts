import { type FakeTelegram, startFakeTelegram } from '@switchboard/testkit/telegram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServeProcess, eventually, get, serveYaml } from './serve-process.js';

// biome-ignore lint/suspicious/noExplicitAny: Bot API payloads are read freely
type Json = Record<string, any>;

const alice = { id: 111_222_333, is_bot: false, first_name: 'Alice', username: 'alice' };
const bob = { id: 424_242, is_bot: false, first_name: 'Bob' };
const group = { id: -4_012_345_678, title: 'Tea party', type: 'group' };
const forum = { id: -1_001_234_567_890, title: 'Wonderland', type: 'supergroup', is_forum: true };
const privateChat = (user: { id: number; first_name: string }) => ({
  id: user.id,
  first_name: user.first_name,
  type: 'private',
});

/** A text message update; `@switchboard_bot` in the text becomes a mention entity, as Telegram does. */
function textUpdate(fake: FakeTelegram, fields: { chat: Json; from?: Json; text: string } & Json): Json {
  const mention = `@${fake.botUser.username}`;
  const offset = fields.text.indexOf(mention);
  const entities = offset < 0 ? {} : { entities: [{ type: 'mention', offset, length: mention.length }] };
  return { message: fake.message({ from: alice, ...entities, ...fields }) };
}

function sentTo(fake: FakeTelegram, chatId: number): Json[] {
  return fake
    .sentMessages()
    .filter((sent) => sent.body.chat_id === chatId)
    .map((sent) => sent.body);
}

const running: ServeProcess[] = [];
async function serve(yaml: string): Promise<ServeProcess> {
  const gateway = await serveYaml(`audit: { ignored: true }\n${yaml}`);
  running.push(gateway);
  return gateway;
}

/** Log lines at warn (40) or above. */
const problems = (gateway: ServeProcess) => gateway.logs.filter((line) => line.level >= 40);

describe('telegram channel (end to end, polling)', () => {
  let fake: FakeTelegram;
  let gateway: ServeProcess;

  beforeAll(async () => {
    fake = await startFakeTelegram();
    gateway = await serve(
      `
channels:
  - { id: tg, type: telegram, token: "${fake.token}", mode: polling, api_root: "${fake.url}/" }
pipelines:
  - { id: echo, type: echo }
  # Runnable by count: long delays, so that the gaps between a burst's messages do not matter.
  - { id: burst, type: echo, aggregation: { enabled: true, delay: 10s, max_messages: 3 } }
  - { id: pair, type: echo, aggregation: { enabled: true, delay: 10s, max_messages: 2 } }
routing:
  default: echo
  rules:
    - { name: drop-ads, type: message_content, operator: contains, value: "buy now", pipeline: __discard__ }
    - { name: long-pair, type: launcher_id, operator: eq, value: "424243", pipeline: pair }
    - { name: bursty, type: sender_id, operator: eq, value: "${bob.id}", pipeline: burst }
`,
    );
  });
  afterAll(async () => {
    await Promise.all(running.splice(0).map((process) => process.stop('SIGKILL')));
    await fake.close();
  });

  describe('when it starts', () => {
    it('calls getMe, deletes the webhook and long-polls for messages only', async () => {
      // The first long poll may go out just after the gateway logged `listening`.
      const methods = await eventually(
        () => fake.callsOf('getUpdates').length > 0 && fake.calls.map((call) => call.method),
      );
      expect(methods.slice(0, 3)).toEqual(['getMe', 'deleteWebhook', 'getUpdates']);
      expect(fake.callsOf('getUpdates')[0]?.body).toMatchObject({
        timeout: 30,
        allowed_updates: ['message', 'edited_message', 'message_reaction'],
      });
      expect((await get(`${gateway.url}/readyz`)).status).toBe(200);
    });
  });

  describe('when a private message arrives', () => {
    it('answers in that chat, replying to the message, and confirms the update', async () => {
      const update = fake.pushUpdate(textUpdate(fake, { chat: privateChat(alice), text: 'hello bot' }));
      const [reply] = await eventually(() => sentTo(fake, alice.id).length > 0 && sentTo(fake, alice.id));
      expect(reply).toEqual({
        chat_id: alice.id,
        text: 'hello bot',
        reply_parameters: { message_id: update.message.message_id, allow_sending_without_reply: true },
      });
      await eventually(() => fake.confirmedOffset() > update.update_id);
    });
  });

  describe('when a group message mentions the bot', () => {
    it('answers in the group, and inside the forum topic it came from', async () => {
      fake.pushUpdate(textUpdate(fake, { chat: group, text: '@switchboard_bot hi all' }));
      const [groupReply] = await eventually(
        () => sentTo(fake, group.id).length > 0 && sentTo(fake, group.id),
      );
      expect(groupReply).toMatchObject({ chat_id: group.id, text: '@switchboard_bot hi all' });
      expect(groupReply?.message_thread_id).toBeUndefined();

      fake.pushUpdate(
        textUpdate(fake, {
          chat: forum,
          text: 'status @switchboard_bot',
          message_thread_id: 500,
          is_topic_message: true,
        }),
      );
      const [topicReply] = await eventually(
        () => sentTo(fake, forum.id).length > 0 && sentTo(fake, forum.id),
      );
      expect(topicReply).toMatchObject({
        chat_id: forum.id,
        message_thread_id: 500,
        text: 'status @switchboard_bot',
      });
    });
  });

  describe('when a group message does not mention the bot', () => {
    it('is ignored (audited as not_mentioned) and gets no reply', async () => {
      const chat = { ...group, id: -4_000_000_001 };
      const update = fake.pushUpdate(textUpdate(fake, { chat, text: 'just chatting' }));
      const audit = await eventually(async () => {
        const page = await get(`${gateway.url}/admin/audit?outcome=ignored&channel=tg`);
        return page.body.items.find((item: Json) => item.chat_id === String(chat.id));
      });
      expect(audit).toMatchObject({
        reason: 'not_mentioned',
        platform_message_id: `${chat.id}:${update.message.message_id}`,
      });
      expect(sentTo(fake, chat.id)).toEqual([]);
    });
  });

  describe('when a rule routes a message to __discard__', () => {
    it('audits it with the Telegram ids and sends nothing', async () => {
      const chat = privateChat({ id: 900_001, first_name: 'Spammer' });
      const update = fake.pushUpdate(
        textUpdate(fake, { chat, from: { ...alice, id: 900_001 }, text: 'buy now, cheap' }),
      );
      const audit = await eventually(
        async () => (await get(`${gateway.url}/admin/audit?outcome=discarded&rule=drop-ads`)).body.items[0],
      );
      expect(audit).toMatchObject({
        outcome: 'discarded',
        rule: 'drop-ads',
        channel: 'tg',
        platform: 'telegram',
        chat_type: 'person',
        chat_id: '900001',
        sender_id: '900001',
        platform_message_id: `900001:${update.message.message_id}`,
        text: 'buy now, cheap',
      });
      expect(sentTo(fake, 900_001)).toEqual([]);
    });
  });

  describe('when messages come in a burst and the pipeline debounces', () => {
    it('answers once with the merged text', async () => {
      const chat = privateChat(bob);
      for (const text of ['a', 'b', 'c']) fake.pushUpdate(textUpdate(fake, { chat, from: bob, text }));
      // The first answer holds all three (max_messages: 3), so there is nothing left to answer.
      const [first] = await eventually(() => sentTo(fake, bob.id).length > 0 && sentTo(fake, bob.id));
      expect(first?.text).toBe('a\nb\nc');
    });
  });

  describe('when a reply is longer than 4096 characters', () => {
    it('sends it in order as several messages within the limit', async () => {
      const chat = { id: 424_243, first_name: 'Bob', type: 'private' };
      const first = 'a'.repeat(3000);
      const second = 'b'.repeat(3000);
      fake.pushUpdate(textUpdate(fake, { chat, from: bob, text: first }));
      fake.pushUpdate(textUpdate(fake, { chat, from: bob, text: second }));
      // Merged by count (max_messages: 2): `${first}\n${second}`, 6001 characters, split at the newline.
      const texts = await eventually(
        () => sentTo(fake, chat.id).length >= 2 && sentTo(fake, chat.id).map((body) => body.text),
      );
      expect(texts).toEqual([first, second]);
    });
  });

  describe('when Telegram answers sendMessage with 429 retry_after', () => {
    it('waits as asked and then delivers the reply', async () => {
      const chat = privateChat({ id: 777_001, first_name: 'Carol' });
      fake.failNext('sendMessage', 1, { status: 429, retryAfterS: 1 });
      fake.pushUpdate(textUpdate(fake, { chat, from: { ...alice, id: 777_001 }, text: 'are you there?' }));
      const [reply] = await eventually(
        () =>
          sentTo(fake, chat.id).length > 0 && fake.sentMessages().filter((s) => s.body.chat_id === chat.id),
      );
      const attempts = fake.callsOf('sendMessage').filter((call) => call.body.chat_id === chat.id);
      expect(attempts.map((call) => call.status)).toEqual([429, 200]);
      expect((reply?.at ?? 0) - (attempts[0]?.at ?? 0)).toBeGreaterThanOrEqual(1000);
      expect(reply?.body.text).toBe('are you there?');
    });
  });

  describe('after all of the above', () => {
    it('logged no warning or error', () => {
      expect(problems(gateway)).toEqual([]);
    });
  });
});

describe('telegram channel (end to end, webhook)', () => {
  const secret = 'whsec_telegram-e2e';
  let fake: FakeTelegram;
  let gateway: ServeProcess;
  let hook: string;

  beforeAll(async () => {
    fake = await startFakeTelegram();
    gateway = await serve(
      `
channels:
  - id: tgw
    type: telegram
    token: "${fake.token}"
    mode: webhook
    api_root: "${fake.url}"
    webhook: { secret_token: ${secret}, url: "https://bot.example.com/telegram/tgw" }
pipelines: [{ id: echo, type: echo }]
routing: { default: echo }
`,
    );
    hook = `${gateway.url}/telegram/tgw`;
  });
  afterAll(async () => {
    await Promise.all(running.splice(0).map((process) => process.stop('SIGKILL')));
    await fake.close();
  });

  describe('when it starts', () => {
    it('registers the webhook with its secret token and never polls', () => {
      expect(fake.webhook()).toEqual({
        url: 'https://bot.example.com/telegram/tgw',
        secret_token: secret,
        allowed_updates: ['message', 'edited_message', 'message_reaction'],
      });
      expect(fake.callsOf('getUpdates')).toEqual([]);
    });
  });

  describe('when the secret token is wrong or missing', () => {
    it('answers 401 and queues nothing: the same update with the right token is new', async () => {
      const update = {
        update_id: 5_000_001,
        ...textUpdate(fake, { chat: privateChat(alice), text: 'knock knock' }),
      };
      const wrong = await fake.deliverWebhook(hook, update, 'not-the-secret');
      expect(wrong.status).toBe(401);
      expect(wrong.body).toMatchObject({ error: { code: 'SB_HTTP_UNAUTHORIZED' } });
      expect((await fake.deliverWebhook(hook, update)).status).toBe(401);
      // Both refusals fall within one minute: one warning names the header; the second is not logged.
      const refusals = await eventually(() => {
        const lines = gateway.logs.filter((line) => line.msg === 'webhook call refused');
        return lines.length > 0 && lines;
      });
      expect(refusals).toEqual([
        expect.objectContaining({
          level: 40,
          route: '/telegram/tgw',
          problem: 'X-Telegram-Bot-Api-Secret-Token is missing or does not match webhook.secret_token',
        }),
      ]);

      expect((await fake.deliverWebhook(hook, update, secret)).status).toBe(200);
      // Had a 401'd delivery reached the ingress, its update_id would be known and this one a duplicate.
      const metrics = await get(`${gateway.url}/metrics`);
      expect(metrics.body).not.toMatch(/switchboard_messages_total\{channel="tgw",outcome="duplicate"/);
      const [reply] = await eventually(() => sentTo(fake, alice.id).length > 0 && sentTo(fake, alice.id));
      expect(reply?.text).toBe('knock knock');
    });
  });

  describe('when Telegram delivers the same update_id twice', () => {
    it('runs one turn and counts the second delivery as a duplicate', async () => {
      const chat = privateChat({ id: 600_001, first_name: 'Dave' });
      const update = {
        update_id: 6_000_001,
        ...textUpdate(fake, { chat, from: { ...alice, id: 600_001 }, text: 'once' }),
      };
      expect((await fake.deliverWebhook(hook, update, secret)).status).toBe(200);
      expect((await fake.deliverWebhook(hook, update, secret)).status).toBe(200);
      const sentinel = textUpdate(fake, { chat, from: { ...alice, id: 600_001 }, text: 'after' });
      expect((await fake.deliverWebhook(hook, sentinel, secret)).status).toBe(200);
      // One session runs in order: a second turn for the redelivery would come before `after`.
      const texts = await eventually(
        () => sentTo(fake, chat.id).length >= 2 && sentTo(fake, chat.id).map((body) => body.text),
      );
      expect(texts).toEqual(['once', 'after']);
      const metrics = await get(`${gateway.url}/metrics`);
      expect(metrics.body).toMatch(
        /switchboard_messages_total\{channel="tgw",outcome="duplicate",reason="redelivery",tenant="default"\} 1/,
      );
    });
  });

  describe('when updates of unsupported kinds arrive', () => {
    it('acknowledges them with 200, queues nothing and logs no warning', async () => {
      // Edits and reactions are events (events.e2e.test.ts); a reaction without a sender is not.
      const unsupported: Json[] = [
        {
          channel_post: fake.message({
            chat: { id: -1_009_999, title: 'News', type: 'channel' },
            text: 'post',
          }),
        },
        {
          my_chat_member: {
            chat: group,
            from: alice,
            date: 1,
            old_chat_member: { status: 'left' },
            new_chat_member: { status: 'member' },
          },
        },
        {
          message_reaction: {
            chat: group,
            message_id: 1,
            date: 1,
            old_reaction: [],
            new_reaction: [{ type: 'emoji', emoji: '👍' }],
          },
        },
        { message: fake.message({ from: alice, chat: group, new_chat_members: [alice] }) },
      ];
      const before = fake.sentMessages().length;
      for (const update of unsupported)
        expect((await fake.deliverWebhook(hook, update, secret)).status).toBe(200);
      // Sentinels in the two chats the updates came from: anything queued there would be answered first.
      for (const sentinel of [
        textUpdate(fake, { chat: privateChat(alice), text: 'sentinel' }),
        textUpdate(fake, { chat: group, text: '@switchboard_bot sentinel' }),
      ]) {
        expect((await fake.deliverWebhook(hook, sentinel, secret)).status).toBe(200);
      }
      const texts = await eventually(
        () =>
          fake.sentMessages().length >= before + 2 &&
          fake
            .sentMessages()
            .slice(before)
            .map((sent) => sent.body.text),
      );
      expect(texts.sort()).toEqual(['@switchboard_bot sentinel', 'sentinel']);
      // The refusal warning of the wrong-token test above is the only one.
      expect(problems(gateway).filter((line) => line.msg !== 'webhook call refused')).toEqual([]);
      const ignored = await eventually(
        () =>
          gateway.logs.filter((line) => line.msg === 'unsupported update ignored').length >=
            unsupported.length && gateway.logs.filter((line) => line.msg === 'unsupported update ignored'),
      );
      expect(ignored).toHaveLength(unsupported.length);
    });
  });

  describe('when the body is malformed', () => {
    it('answers 400 with a JSON error naming the problem and keeps serving', async () => {
      const broken = await fake.deliverWebhook(hook, '{"update_id": ', secret);
      expect(broken.status).toBe(400);
      expect(broken.body).toMatchObject({ error: { code: 'SB_HTTP_BAD_REQUEST' } });

      const wrongShape = await fake.deliverWebhook(
        hook,
        { update_id: 'seven', message: { text: 'hi' } },
        secret,
      );
      expect(wrongShape.status).toBe(400);
      expect((wrongShape.body as Json).error.message).toMatch(/body\.update_id: .*expected number/);
      expect((wrongShape.body as Json).error.message).toMatch(
        /body\.message\.chat: .*expected object, received undefined/,
      );

      const chat = privateChat({ id: 600_002, first_name: 'Erin' });
      await fake.deliverWebhook(
        hook,
        textUpdate(fake, { chat, from: { ...alice, id: 600_002 }, text: 'still there?' }),
        secret,
      );
      const replies = await eventually(() => sentTo(fake, chat.id).length > 0 && sentTo(fake, chat.id));
      expect(replies[0]?.text).toBe('still there?');
      expect(gateway.child.exitCode).toBeNull();
    });
  });
});
