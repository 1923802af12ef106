import { type FakeTelegram, startFakeTelegram } from '@switchboard/testkit/telegram';
import { describe, expect, it } from 'vitest';
import { eventually, get, serveYaml, useCleanups } from './serve-process.js';

const cleanup = useCleanups();

const alice = { id: 710_000_001, is_bot: false, first_name: 'Alice' };
const bob = { id: 710_000_002, is_bot: false, first_name: 'Bob' };

function privateMessage(fake: FakeTelegram, user: { id: number; first_name: string }, text: string) {
  return {
    message: fake.message({
      from: { ...user, is_bot: false },
      chat: { id: user.id, first_name: user.first_name, type: 'private' },
      text,
    }),
  };
}

function sentTo(fake: FakeTelegram, chatId: number) {
  return fake.sentMessages().filter((sent) => sent.body.chat_id === chatId);
}

describe('send deadline (switchboard serve against a fake Telegram)', () => {
  describe('when sending a reply hangs and the only global slot is free of it', () => {
    it('abandons the send at outbound.send_timeout and sends it again, and the next session is answered meanwhile', async () => {
      const fake = await startFakeTelegram();
      cleanup(() => fake.close());
      const gateway = await serveYaml(
        `
concurrency: { pipeline: 1 }
channels:
  - { id: tg, type: telegram, token: "${fake.token}", api_root: "${fake.url}", outbound: { send_timeout: 1s, retry: { base_delay: 100ms } } }
pipelines: [{ id: echo, type: echo }]
routing: { default: echo }
`,
        { cleanup },
      );

      fake.failNext('sendMessage', 1, { hang: true });
      fake.pushUpdate(privateMessage(fake, alice, 'into the void'));
      // Alice's reply is stuck at the platform; the turn that produced it has ended.
      await eventually(() => fake.callsOf('sendMessage').some((call) => call.body.chat_id === alice.id));
      const hungAt = Date.now();

      fake.pushUpdate(privateMessage(fake, bob, 'anyone there?'));
      const [reply] = await eventually(() => sentTo(fake, bob.id).length > 0 && sentTo(fake, bob.id));
      expect(reply?.body.text).toBe('anyone there?');

      const [again] = await eventually(() => sentTo(fake, alice.id).length > 0 && sentTo(fake, alice.id));
      expect(again?.body.text).toBe('into the void');
      expect(Date.now() - hungAt).toBeGreaterThanOrEqual(1_000);
      const failure = gateway.logs.find((line) => line.msg === 'send failed, retrying');
      expect(failure?.err).toMatchObject({ code: 'SB_CHANNEL_SEND_TIMEOUT' });
      expect((await get(`${gateway.url}/admin/audit?outcome=dead_lettered`)).body.items).toEqual([]);
    });
  });
});
