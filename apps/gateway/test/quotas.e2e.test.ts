import { type FakeTelegram, startFakeTelegram } from '@switchboard/testkit/telegram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServeProcess, eventually, get, post, serveYaml } from './serve-process.js';

// Tenants' quotas against the real `switchboard serve`: past its quota a message ends
// `dropped`/`quota`; the HTTP channel answers 429 with Retry-After, a chat channel sends the
// tenant's quota_reply once per window, however many messages the sender keeps sending.

const QUOTA_REPLY = 'You have reached the message limit; try again later.';

const alice = { id: 111_222_333, is_bot: false, first_name: 'Alice' };
const bob = { id: 424_242, is_bot: false, first_name: 'Bob' };
const privateChat = (user: { id: number; first_name: string }) => ({
  id: user.id,
  first_name: user.first_name,
  type: 'private',
});

// biome-ignore lint/suspicious/noExplicitAny: Bot API payloads are read freely
type Json = Record<string, any>;

function sentTo(fake: FakeTelegram, chatId: number): string[] {
  return fake
    .sentMessages()
    .filter((sent) => sent.body.chat_id === chatId)
    .map((sent) => (sent.body as Json).text as string);
}

describe('quotas (end to end)', () => {
  let fake: FakeTelegram;
  let gateway: ServeProcess;

  beforeAll(async () => {
    fake = await startFakeTelegram();
    gateway = await serveYaml(`
channels: [ { id: api, type: openapi } ]
pipelines: [ { id: echo, type: echo } ]
routing: { default: echo }
tenants:
  - id: acme
    channels:
      - { id: acme-api, type: openapi, prefix: /acme }
      - { id: acme-tg, type: telegram, token: "${fake.token}", mode: polling, api_root: "${fake.url}/" }
    pipelines: [ { id: acme-echo, type: echo } ]
    routing: { default: acme-echo }
    quotas:
      - { scope: sender, limit: 2, per: 1h }
    quota_reply: "${QUOTA_REPLY}"
`);
  });
  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await fake?.close();
  });

  const say = (prefix: string, user: string, text: string) =>
    post(`${gateway.url}${prefix}/messages`, { session_id: `s-${user}`, user_id: user, text });

  describe('when an HTTP caller passes its sender quota', () => {
    it('answers 429 SB_QUOTA_EXCEEDED with Retry-After, and records dropped/quota with the tenant', async () => {
      expect((await say('/acme', 'u1', 'one')).body).toMatchObject({ status: 'completed' });
      expect((await say('/acme', 'u1', 'two')).body).toMatchObject({ status: 'completed' });
      const refused = await say('/acme', 'u1', 'three');
      expect(refused.status).toBe(429);
      expect(refused.body?.error?.code).toBe('SB_QUOTA_EXCEEDED');
      // Two an hour: the next token is back half an hour after the first message.
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(1700);
      expect(retryAfter).toBeLessThanOrEqual(1800);

      // Another sender of the tenant, and the tenant default (no quotas), go on.
      expect((await say('/acme', 'u2', 'hi')).body).toMatchObject({ status: 'completed' });
      for (const text of ['a', 'b', 'c']) expect((await say('/v1', 'u1', text)).status).toBe(200);

      const audit = await eventually(async () => {
        const page = await get(`${gateway.url}/admin/audit?outcome=dropped&channel=acme-api`);
        return page.body?.items.length > 0 && page.body.items;
      });
      expect(audit).toEqual([
        expect.objectContaining({ tenant: 'acme', outcome: 'dropped', reason: 'quota', text: 'three' }),
      ]);
    });
  });

  describe('when a Telegram sender keeps writing past the quota', () => {
    it('gets the quota_reply exactly once for several refused messages in one window', async () => {
      for (const text of ['m1', 'm2', 'm3', 'm4', 'm5']) {
        fake.pushUpdate({ message: fake.message({ from: alice, chat: privateChat(alice), text }) });
      }
      // Three of five refused, each recorded; the first two answered by the pipeline.
      await eventually(async () => {
        const page = await get(`${gateway.url}/admin/audit?outcome=dropped&reason=quota&channel=acme-tg`);
        return page.body?.items.length === 3;
      });
      await eventually(() => sentTo(fake, alice.id).includes(QUOTA_REPLY));
      // Bob's answer takes a whole turn and the outbox: a second quota reply to Alice, sent
      // straight through the channel when a later message was refused, would be there by then.
      fake.pushUpdate({ message: fake.message({ from: bob, chat: privateChat(bob), text: 'hello' }) });
      await eventually(() => sentTo(fake, bob.id).includes('hello'));
      await eventually(() => sentTo(fake, alice.id).filter((text) => text !== QUOTA_REPLY).length === 2);

      const toAlice = sentTo(fake, alice.id);
      expect(toAlice.filter((text) => text === QUOTA_REPLY)).toHaveLength(1);
      expect(toAlice.filter((text) => text !== QUOTA_REPLY).sort()).toEqual(['m1', 'm2']);
      const dropped = await get(`${gateway.url}/admin/audit?outcome=dropped&channel=acme-tg`);
      expect(dropped.body?.items.map((item: Json) => [item.tenant, item.reason, item.text]).sort()).toEqual([
        ['acme', 'quota', 'm3'],
        ['acme', 'quota', 'm4'],
        ['acme', 'quota', 'm5'],
      ]);
    });
  });
});
