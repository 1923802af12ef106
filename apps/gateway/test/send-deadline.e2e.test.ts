import { type FakeTelegram, startFakeTelegram } from '@switchboard/testkit/telegram';
import { describe, expect, it } from 'vitest';
import {
  eventually,
  get,
  startServe,
  tempDir,
  testConfig,
  useCleanups,
  writeConfig,
} from './serve-process.js';

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
  describe('when sending a reply hangs and the only global slot is taken by it', () => {
    it('ends that turn at outbound.send_timeout as delivery_failed, and the next session is answered', async () => {
      const fake = await startFakeTelegram();
      cleanup(() => fake.close());
      const dir = tempDir();
      const configPath = writeConfig(
        dir,
        testConfig(
          dir,
          `
concurrency: { pipeline: 1 }
channels:
  - { id: tg, type: telegram, token: "${fake.token}", api_root: "${fake.url}", outbound: { send_timeout: 1s } }
pipelines: [{ id: echo, type: echo }]
routing: { default: echo }
`,
        ),
      );
      const gateway = await startServe({ dir, configPath });
      cleanup(() => gateway.stop('SIGKILL'));

      fake.failNext('sendMessage', 1, { hang: true });
      fake.pushUpdate(privateMessage(fake, alice, 'into the void'));
      // Alice's reply is stuck at the platform, holding the one global slot.
      await eventually(() => fake.callsOf('sendMessage').some((call) => call.body.chat_id === alice.id));

      fake.pushUpdate(privateMessage(fake, bob, 'anyone there?'));
      const [reply] = await eventually(() => sentTo(fake, bob.id).length > 0 && sentTo(fake, bob.id));
      expect(reply?.body.text).toBe('anyone there?');

      const audit = await eventually(async () => {
        const page = await get(`${gateway.url}/admin/audit?outcome=dead_lettered`);
        return page.body.items?.length > 0 && page.body.items;
      });
      expect(audit).toEqual([
        expect.objectContaining({ reason: 'delivery_failed', chat_id: String(alice.id) }),
      ]);
      expect(audit[0].error).toBe(
        'SB_CHANNEL_SEND_TIMEOUT: channel "tg" did not finish sending within 1000 ms',
      );
      expect(sentTo(fake, alice.id)).toEqual([]);
    });
  });
});
