import { conformanceIngress } from '@switchboard/contracts';
import { randomBytes } from 'node:crypto';
import { silentLogger } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { encryptFeishuBody } from '@switchboard/testkit/feishu';
import { afterEach, describe, expect, it } from 'vitest';
import { type FeishuGateway, type FeishuGatewayOptions, startFeishuGateway } from './harness.js';

let gateway: FeishuGateway | undefined;
afterEach(async () => {
  await gateway?.stop();
  gateway = undefined;
});

async function start(options: FeishuGatewayOptions = {}): Promise<FeishuGateway> {
  gateway = await startFeishuGateway(options);
  return gateway;
}

describe('feishu channel', () => {
  describe('when the console checks the URL', () => {
    it('echoes the challenge of an encrypted, unsigned url_verification', async () => {
      const { fake, webhookUrl } = await start();
      const answer = await fake.verifyUrl(webhookUrl);
      expect(answer).toMatchObject({ status: 200, body: { challenge: answer.challenge } });
    });

    it('refuses a plain url_verification with the wrong token (401)', async () => {
      const { fake, webhookUrl } = await start({ fake: { encryptKey: null } });
      const answer = await fake.verifyUrl(webhookUrl, { token: 'not-the-token' });
      expect(answer.status).toBe(401);
      expect(JSON.stringify(answer.body)).toContain('verification_token');
    });
  });

  describe('when an event is not signed with the encrypt key', () => {
    it('refuses (401) a signed event whose timestamp is an hour old, and takes nothing', async () => {
      const { fake, webhookUrl, outcomes } = await start();
      const event = fake.messageEvent({ text: 'replayed' });
      const hourAgo = Math.floor(Date.now() / 1000) - 3600;
      const answer = await fake.deliverEvent(webhookUrl, event, { timestamp: hourAgo });
      expect(answer.status).toBe(401);
      expect(JSON.stringify(answer.body)).toContain('x-lark-request-timestamp');
      expect(outcomes).toHaveLength(0);
    });

    it('refuses (401) an unencrypted url_verification when an encrypt key is set', async () => {
      const { fake, webhookUrl } = await start({ config: { verification_token: undefined } });
      const check = { type: 'url_verification', challenge: 'x' };
      const answer = await fake.deliverEvent(webhookUrl, check, { signature: null, plain: true });
      expect(answer.status).toBe(401);
      // Only `{ encrypt }` is read unsigned: a field beside it is refused too.
      const { encrypt } = JSON.parse(encryptFeishuBody(fake.encryptKey as string, JSON.stringify(check)));
      const beside = { encrypt, ...check };
      expect((await fake.deliverEvent(webhookUrl, beside, { signature: null, plain: true })).status).toBe(
        401,
      );
    });

    it('answers one 401 body to every unsigned body: no padding oracle', async () => {
      const { fake, webhookUrl, outcomes } = await start();
      const post = async (rawBody: string, headers: Record<string, string> = {}) => {
        const response = await fetch(webhookUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: rawBody,
        });
        return { status: response.status, text: await response.text() };
      };
      const key = fake.encryptKey as string;
      const bodies = [
        // Random ciphertexts: most have bad padding, some good padding and garbage inside.
        ...Array.from({ length: 64 }, () => JSON.stringify({ encrypt: randomBytes(48).toString('base64') })),
        // Good padding and JSON, but an event: only the URL check is taken unsigned.
        encryptFeishuBody(key, JSON.stringify(fake.messageEvent({ text: 'hello' }))),
        encryptFeishuBody(key, 'not json'),
        JSON.stringify(fake.messageEvent({ text: 'plain' })),
      ];
      const answers = await Promise.all(bodies.map((body) => post(body)));
      const forged = await post(bodies[64] as string, {
        'x-lark-signature': 'f'.repeat(64),
        'x-lark-request-timestamp': String(Math.floor(Date.now() / 1000)),
        'x-lark-request-nonce': 'n',
      });
      const expected = {
        status: 401,
        text: JSON.stringify({
          error: {
            code: 'SB_HTTP_UNAUTHORIZED',
            message: 'x-lark-signature: missing or not made with channels[fs].encrypt_key',
          },
        }),
      };
      for (const answer of [...answers, forged]) expect(answer).toEqual(expected);
      expect(outcomes).toHaveLength(0);
    });

    it('answers one 401 body to an encrypted URL check with the wrong token', async () => {
      const { fake, webhookUrl } = await start();
      const answer = await fake.verifyUrl(webhookUrl, { token: 'not-the-token' });
      expect(answer).toMatchObject({
        status: 401,
        body: { error: { message: 'x-lark-signature: missing or not made with channels[fs].encrypt_key' } },
      });
    });

    it('answers 401 to a forged signature and to none, and takes nothing', async () => {
      const { fake, webhookUrl, outcomes } = await start();
      const event = fake.messageEvent({ text: 'hello' });
      expect((await fake.deliverEvent(webhookUrl, event, { signature: 'f'.repeat(64) })).status).toBe(401);
      expect((await fake.deliverEvent(webhookUrl, event, { signature: null })).status).toBe(401);
      expect(outcomes).toHaveLength(0);
      expect(fake.callsTo('reply')).toHaveLength(0);
    });
  });

  describe('when an event is malformed', () => {
    it('acknowledges (200) a message whose content is not JSON, and takes nothing', async () => {
      const { fake, webhookUrl, outcomes } = await start();
      const event = fake.messageEvent({ text: 'hello' });
      event.event.message.content = '{not json';
      expect((await fake.deliverEvent(webhookUrl, event)).status).toBe(200);
      expect(outcomes).toHaveLength(0);
      expect(fake.callsTo('reply')).toHaveLength(0);
    });

    it('answers a message with @_all and a malformed mention, skipping that one', async () => {
      const { fake, webhookUrl } = await start();
      const event = fake.messageEvent({ text: '@_all @_user_1 hi' });
      event.event.message.mentions = [
        { key: '@_all', id: { open_id: '' }, name: 'all' },
        { key: '@_user_1', id: { open_id: '' }, name: 'nobody' },
      ];
      expect((await fake.deliverEvent(webhookUrl, event)).status).toBe(200);
      expect(await fake.waitForShown(event.event.message.chat_id, 1)).toEqual(['echo: @all @_user_1 hi']);
    });
  });

  describe('when the app secret is wrong', () => {
    it('fails the start with SB_CHANNEL_AUTH_FAILED naming app_secret', async () => {
      const { fake, channel } = await start({ started: false, config: { app_secret: 'not-the-secret' } });
      await expect(
        channel.start({ ingress: conformanceIngress().ingress, logger: silentLogger }),
      ).rejects.toMatchObject({
        code: 'SB_CHANNEL_AUTH_FAILED',
        message: expect.stringContaining('channels[fs].app_secret'),
      });
      expect(fake.callsTo('bot_info')).toEqual([]);
    });
  });

  describe('when a user writes to the bot one to one', () => {
    it('answers with the reply API, fetching the tenant token once', async () => {
      const { fake, webhookUrl } = await start();
      const event = fake.messageEvent({ text: 'hello' });
      expect((await fake.deliverEvent(webhookUrl, event)).status).toBe(200);
      expect(await fake.waitForShown(event.event.message.chat_id, 1)).toEqual(['echo: hello']);
      await fake.deliverEvent(webhookUrl, fake.messageEvent({ text: 'again' }));
      await fake.waitForShown(event.event.message.chat_id, 2);
      expect(fake.callsTo('token')).toHaveLength(1);
      expect(fake.botMessages()[0]?.replyTo).toBe(event.event.message.message_id);
    });

    it('takes a redelivered event (same event_id) once', async () => {
      const { fake, webhookUrl, outcomes } = await start();
      const event = fake.messageEvent({ text: 'once' });
      await fake.deliverEvent(webhookUrl, event);
      await fake.deliverEvent(webhookUrl, event);
      await fake.waitForShown(event.event.message.chat_id, 1);
      await eventually(() => outcomes.some((outcome) => outcome.kind === 'duplicate'), 5_000, 'a duplicate');
      expect(fake.callsTo('reply')).toHaveLength(1);
    });
  });

  describe('when a message comes in a group', () => {
    it('answers only when the bot is mentioned, in the same chat', async () => {
      const { fake, webhookUrl, outcomes } = await start();
      const chatId = 'oc_group1';
      await fake.deliverEvent(webhookUrl, fake.messageEvent({ text: 'chatter', chatType: 'group', chatId }));
      await eventually(
        () => outcomes.some((outcome) => outcome.kind === 'ignored'),
        5_000,
        'an ignored outcome',
      );
      await fake.deliverEvent(
        webhookUrl,
        fake.messageEvent({ text: 'hi bot', chatType: 'group', chatId, mentionBot: true }),
      );
      expect(await fake.waitForShown(chatId, 1)).toEqual(['echo: @Switchboard hi bot']);
    });

    it('ignores messages of the bot itself', async () => {
      const { fake, webhookUrl, outcomes } = await start();
      const event = fake.messageEvent({ text: 'mine', senderOpenId: fake.botOpenId, senderType: 'app' });
      expect((await fake.deliverEvent(webhookUrl, event)).status).toBe(200);
      await eventually(
        () => outcomes.some((outcome) => outcome.kind === 'ignored'),
        5_000,
        'an ignored outcome',
      );
      expect(fake.callsTo('reply')).toHaveLength(0);
    });
  });

  describe('when sending', () => {
    it('splits a reply past the text limit into parts sent in order', async () => {
      const long = `${'a'.repeat(30_000)}${'b'.repeat(10)}`;
      const { fake, webhookUrl } = await start({ answer: () => [long] });
      const event = fake.messageEvent({ text: 'long' });
      await fake.deliverEvent(webhookUrl, event);
      expect(await fake.waitForShown(event.event.message.chat_id, 2)).toEqual([
        'a'.repeat(30_000),
        'bbbbbbbbbb',
      ]);
    });

    it('delivers once, later, a reply the platform rate-limited', async () => {
      const { fake, webhookUrl } = await start();
      fake.failNext('reply', 1, { kind: 'rate_limited', resetSeconds: 0 });
      const event = fake.messageEvent({ text: 'busy' });
      await fake.deliverEvent(webhookUrl, event);
      expect(await fake.waitForShown(event.event.message.chat_id, 1)).toEqual(['echo: busy']);
      expect(fake.callsTo('reply').map((call) => call.status)).toEqual([429, 200]);
    });

    it('fails a rate-limited send as retryable SB_CHANNEL_RATE_LIMITED', async () => {
      const { fake, webhookUrl, channel } = await start();
      const origin = await originOf(fake, webhookUrl);
      fake.failNext('reply', 1, { kind: 'rate_limited', resetSeconds: 3 });
      await expect(channel.send(origin, [{ text: 'x' }], AbortSignal.timeout(2_000))).rejects.toMatchObject({
        code: 'SB_CHANNEL_RATE_LIMITED',
        retryable: true,
        retryAfterMs: 3_000,
      });
    });

    it('names app_secret, and never shows it, when the platform refuses the credentials', async () => {
      const { fake, webhookUrl, channel } = await start({ config: { bot_open_id: 'ou_bot0000' } });
      const origin = await originOf(fake, webhookUrl);
      fake.revokeTokens();
      fake.failNext('token', 1, { kind: 'auth' });
      const failure = await channel
        .send(origin, [{ text: 'x' }], AbortSignal.timeout(2_000))
        .catch((err) => err);
      expect(failure).toMatchObject({ code: 'SB_CHANNEL_AUTH_FAILED' });
      expect(failure.message).toContain('channels[fs].app_secret');
      expect(JSON.stringify({ message: failure.message, details: failure.details })).not.toContain(
        fake.appSecret,
      );
    });

    it.each([
      ['its frequency limit', 99991400, 'SB_CHANNEL_RATE_LIMITED'],
      ['a code not about credentials', 20050, 'SB_CHANNEL_SEND_FAILED'],
    ])('fails as retryable when the token endpoint answers %s', async (_, code, expected) => {
      const { fake, webhookUrl, channel } = await start();
      const origin = await originOf(fake, webhookUrl);
      fake.revokeTokens();
      fake.failNext('token', 1, { kind: 'code', code });
      await expect(channel.send(origin, [{ text: 'x' }], AbortSignal.timeout(2_000))).rejects.toMatchObject({
        code: expected,
        retryable: true,
      });
      expect(fake.callsTo('token').at(-1)?.status).toBe(200);
    });

    it('fetches a new tenant token when the platform refuses the cached one, and sends', async () => {
      const { fake, webhookUrl, channel } = await start();
      const origin = await originOf(fake, webhookUrl);
      fake.revokeTokens();
      await channel.send(origin, [{ text: 'after the revocation' }], AbortSignal.timeout(2_000));
      expect(fake.shownIn(origin.chat.id).at(-1)).toBe('after the revocation');
      expect(fake.callsTo('token')).toHaveLength(2);
      expect(fake.callsTo('reply').map((call) => call.status)).toEqual([200, 400, 200]);
    });

    it('streams a preview by editing the bot message, which the final send edits again', async () => {
      const { fake, webhookUrl, channel } = await start();
      const origin = await originOf(fake, webhookUrl);
      const signal = AbortSignal.timeout(2_000);
      const draft = await channel.preview?.(origin, 'partial', undefined, signal);
      await channel.preview?.(origin, 'partial answer', draft, signal);
      await channel.send(origin, [{ text: 'the whole answer' }], signal, { draft });
      const message = fake.botMessages().find((candidate) => candidate.id === draft);
      expect(message?.texts).toEqual(['partial', 'partial answer', 'the whole answer']);
      expect(fake.callsTo('update')).toHaveLength(2);
    });

    it("keeps the last of Feishu's 20 edits of a message for the answer when previews stream long", async () => {
      const { fake, webhookUrl, channel } = await start();
      const origin = await originOf(fake, webhookUrl);
      // 21 paced calls at Feishu's 5 a second.
      const signal = AbortSignal.timeout(15_000);
      let draft: string | undefined;
      for (let index = 1; index <= 25; index += 1)
        draft = await channel.preview?.(origin, `part ${index}`, draft, signal);
      await channel.send(origin, [{ text: 'the whole answer' }], signal, { draft });
      expect(fake.shownIn(origin.chat.id).filter((text) => text === 'the whole answer')).toHaveLength(1);
      expect(
        fake
          .botMessages()
          .find((message) => message.id === draft)
          ?.texts.at(-1),
      ).toBe('the whole answer');
      expect(fake.callsTo('update')).toHaveLength(20);
      expect(fake.callsTo('update').every((call) => call.status === 200)).toBe(true);
    });

    it("posts the answer as a new reply when Feishu refuses the draft's last edit", async () => {
      const { fake, webhookUrl, channel } = await start();
      const origin = await originOf(fake, webhookUrl);
      const signal = AbortSignal.timeout(5_000);
      const draft = await channel.preview?.(origin, 'partial', undefined, signal);
      // Edited where this process could not count it (before a restart): the cap is spent.
      fake.failNext('update', 1, { kind: 'edit_limit' });
      await channel.send(origin, [{ text: 'the whole answer' }], signal, { draft });
      expect(fake.shownIn(origin.chat.id).filter((text) => text === 'the whole answer')).toHaveLength(1);
      expect(fake.callsTo('update').map((call) => call.status)).toEqual([400]);
      expect(fake.botMessages().at(-1)?.replyTo).toBe(origin.platform_message_id);
    });

    it('posts the answer as a new reply when the draft can no longer be edited for another reason', async () => {
      const { fake, webhookUrl, channel } = await start();
      const origin = await originOf(fake, webhookUrl);
      const signal = AbortSignal.timeout(5_000);
      const draft = await channel.preview?.(origin, 'partial', undefined, signal);
      // A code of its own (the draft recalled, the edit window passed): refused for good all the same.
      fake.failNext('update', 1, { kind: 'code', code: 230031 });
      await channel.send(origin, [{ text: 'the whole answer' }], signal, { draft });
      expect(fake.shownIn(origin.chat.id).filter((text) => text === 'the whole answer')).toHaveLength(1);
      expect(fake.botMessages().at(-1)?.texts).toEqual(['the whole answer']);
    });

    it('does not post the answer again when a retry meets the cap its lost edit spent', async () => {
      const { fake, webhookUrl, channel } = await start();
      const origin = await originOf(fake, webhookUrl);
      const signal = AbortSignal.timeout(5_000);
      const draft = await channel.preview?.(origin, 'partial', undefined, signal);
      const posted = fake.botMessages().length;
      // The last edit reaches Feishu, its answer does not: the send fails and is retried.
      fake.failNext('update', 1, { kind: 'applies_then_fails', status: 500 });
      await expect(
        channel.send(origin, [{ text: 'the whole answer' }], signal, { draft }),
      ).rejects.toMatchObject({ retryable: true });
      // The retry's edit is one too many.
      fake.failNext('update', 1, { kind: 'edit_limit' });
      await channel.send(origin, [{ text: 'the whole answer' }], signal, { draft });
      expect(fake.callsTo('get').map((call) => call.messageId)).toEqual([draft]);
      expect(fake.botMessages()).toHaveLength(posted);
      expect(fake.shownIn(origin.chat.id).filter((text) => text === 'the whole answer')).toHaveLength(1);
    });

    it('leaves a retryable failure of the last edit to the outbox, without posting', async () => {
      const { fake, webhookUrl, channel } = await start();
      const origin = await originOf(fake, webhookUrl);
      const signal = AbortSignal.timeout(5_000);
      const draft = await channel.preview?.(origin, 'partial', undefined, signal);
      const posted = fake.botMessages().length;
      fake.failNext('update', 1, { kind: 'http_status', status: 503 });
      await expect(
        channel.send(origin, [{ text: 'the whole answer' }], signal, { draft }),
      ).rejects.toMatchObject({
        code: 'SB_CHANNEL_SEND_FAILED',
        retryable: true,
      });
      expect(fake.botMessages()).toHaveLength(posted);
    });
  });
});

/** A message taken by the channel (its echo shown), to answer to directly. */
async function originOf(fake: FeishuGateway['fake'], webhookUrl: string) {
  const event = fake.messageEvent({ text: 'origin' });
  await fake.deliverEvent(webhookUrl, event);
  await fake.waitForShown(event.event.message.chat_id, 1);
  const { normalizeFeishuEvent } = await import('../src/inbound/normalize.js');
  const origin = normalizeFeishuEvent(event.event, {
    channelId: 'fs',
    botOpenId: fake.botOpenId,
    messageId: '01JORIGIN0000000000000000',
    receivedAt: Date.now(),
  });
  if (origin === null) throw new Error('not a message');
  return origin;
}
