import { metricValueAt } from '@switchboard/testkit/prometheus';
import { type FakeTelegram, startFakeTelegram } from '@switchboard/testkit/telegram';
import { describe, expect, it } from 'vitest';
import { type ServeProcess, eventually, serveYaml, useCleanups } from './serve-process.js';

/** Telegram's documented limits: 30 messages a second per bot, 1 per chat. */
const LIMITS = { perBot: { limit: 30, perMs: 1000 }, perChat: { limit: 1, perMs: 1000 } };

const chatIds = (count: number) => Array.from({ length: count }, (_, index) => 6_000_000 + index);
const textsOf = (chatId: number, count: number) =>
  Array.from({ length: count }, (_, index) => `message ${index} of ${chatId}`);

/** Pushes `perChat` private messages from each chat, interleaved across chats as they would arrive. */
function pushMessages(fake: FakeTelegram, chats: number[], perChat: number): void {
  for (let index = 0; index < perChat; index += 1) {
    for (const chatId of chats) {
      const user = { id: chatId, is_bot: false, first_name: `User ${chatId}` };
      fake.pushUpdate({
        message: fake.message({
          from: user,
          chat: { id: chatId, first_name: user.first_name, type: 'private' },
          text: textsOf(chatId, perChat)[index],
        }),
      });
    }
  }
}

describe('pacing of replies (end to end, telegram polling and the echo pipeline)', () => {
  const cleanup = useCleanups();

  function serve(fake: FakeTelegram, outbound: string): Promise<ServeProcess> {
    return serveYaml(
      `audit: { ignored: true }
concurrency: { pipeline: 60 }
channels:
  - { id: tg, type: telegram, token: "${fake.token}", mode: polling, api_root: "${fake.url}"${outbound} }
pipelines:
  - { id: echo, type: echo }
routing: { default: echo }
`,
      { cleanup },
    );
  }

  async function fakeTelegram(): Promise<FakeTelegram> {
    const fake = await startFakeTelegram({ rateLimits: LIMITS });
    cleanup(() => fake.close());
    return fake;
  }

  describe("when replies are paced by Telegram's defaults", () => {
    it('delivers 300 replies to 60 chats, in order per chat, and the fake counts no violation', async () => {
      const fake = await fakeTelegram();
      const gateway = await serve(fake, '');
      const chats = chatIds(60);
      pushMessages(fake, chats, 5);

      await eventually(() => fake.sentMessages().length >= 300, 90_000, '300 replies');
      for (const chatId of chats) expect(fake.deliveredTo(chatId)).toEqual(textsOf(chatId, 5));
      expect(fake.sentMessages()).toHaveLength(300);
      expect(fake.rateLimitViolations()).toBe(0);
      expect(await metricValueAt(gateway.url, 'switchboard_platform_rate_limited_total{channel="tg"}')).toBe(
        0,
      );
      expect(await metricValueAt(gateway.url, 'switchboard_send_wait_seconds_count{channel="tg"}')).toBe(300);
    }, 120_000);
  });

  describe('when pacing is switched off', () => {
    it("meets the fake's 429s, counts them, and still delivers every reply in order", async () => {
      const fake = await fakeTelegram();
      const gateway = await serve(fake, ', outbound: { rate: { enabled: false } }');
      const chats = chatIds(20);
      pushMessages(fake, chats, 3);

      await eventually(() => fake.sentMessages().length >= 60, 90_000, '60 replies');
      for (const chatId of chats) expect(fake.deliveredTo(chatId)).toEqual(textsOf(chatId, 3));
      expect(fake.rateLimitViolations()).toBeGreaterThan(0);
      expect(await metricValueAt(gateway.url, 'switchboard_platform_rate_limited_total{channel="tg"}')).toBe(
        fake.rateLimitViolations(),
      );
    }, 120_000);
  });
});
