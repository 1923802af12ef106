import { type FakeDiscordUser, startFakeDiscord } from '@switchboard/testkit/discord';
import {
  type FakeSlack,
  eventEnvelope,
  messageEvent,
  sendEvent,
  startFakeSlack,
} from '@switchboard/testkit/slack';
import { startFakeTelegram } from '@switchboard/testkit/telegram';
import { describe, expect, it } from 'vitest';
import { startFakePipeline } from './fake-pipeline.js';
import { eventually, serveYaml, useCleanups } from './serve-process.js';

// The bot shows typing while a turn runs: the real `switchboard serve` process, grammY,
// discord.js and Bolt against the fake Telegram, Discord and Slack, and an http backend that
// answers in 3 s.

const cleanup = useCleanups();
const TG_CHAT = { id: 8001, first_name: 'Ann', type: 'private' };
const DISCORD_DM = '1240000000000000077';
const alice: FakeDiscordUser = { id: '234567890123456789', username: 'alice', global_name: 'Alice' };
/** An assistant thread: a thread of a direct message, where Slack shows an app's status. */
const SLACK_DM = 'D0TYPING';
const SLACK_THREAD = '1735000000.000100';
const SLACK_SECRET = 'slack-signing-secret';
/** The channels' typing intervals: a loop left running would call again this long after its first call. */
const TELEGRAM_TYPING_INTERVAL_MS = 4_000;
const DISCORD_TYPING_INTERVAL_MS = 8_000;
const TURN_MS = 3_000;

async function setUp(outbound: string, turnMs: number) {
  const telegram = await startFakeTelegram();
  cleanup(() => telegram.close());
  const discord = await startFakeDiscord();
  cleanup(() => discord.close());
  const slack = await startFakeSlack();
  cleanup(() => slack.close());
  const backend = await startFakePipeline({ delayMs: turnMs });
  cleanup(() => backend.close());
  const gateway = await serveYaml(
    `channels:
  - { id: tg, type: telegram, token: "${telegram.token}", api_root: "${telegram.url}", outbound: ${outbound} }
  - { id: dc, type: discord, token: "${discord.token}", api_url: "${discord.url}", outbound: ${outbound} }
  - { id: sl, type: slack, bot_token: xoxb-test, signing_secret: ${SLACK_SECRET}, api_url: "${slack.apiUrl}", bot_user_id: UBOT, outbound: ${outbound} }
pipelines: [{ id: bot, type: http, url: "${backend.url}", timeout: 30s }]
routing: { default: bot }
`,
    { cleanup },
  );
  await eventually(() => discord.connected());
  return { telegram, discord, slack, gatewayUrl: gateway.url };
}

type Platforms = Awaited<ReturnType<typeof setUp>>;

async function sendAll({ telegram, discord, gatewayUrl }: Platforms): Promise<void> {
  telegram.pushUpdate({
    message: telegram.message({
      chat: TG_CHAT,
      from: { id: TG_CHAT.id, is_bot: false, first_name: 'Ann' },
      text: 'think hard',
    }),
  });
  discord.messageCreate({ channel_id: DISCORD_DM, channel_type: 1, author: alice, content: 'think hard' });
  const event = messageEvent({
    channel: SLACK_DM,
    channel_type: 'im',
    thread_ts: SLACK_THREAD,
    text: 'think hard',
  });
  const answer = await sendEvent(gatewayUrl, 'sl', eventEnvelope(event), { signingSecret: SLACK_SECRET });
  expect(answer.status).toBe(200);
}

/** When each platform got the reply. */
async function repliedAt({ telegram, discord, slack }: Platforms) {
  return eventually(() => {
    const tg = telegram.sentMessages()[0]?.at;
    const dc = discord.requests.find(
      (request) => request.method === 'POST' && request.path === `/channels/${DISCORD_DM}/messages`,
    )?.at;
    const sl = slack.callsTo('chat.postMessage')[0]?.at;
    return tg !== undefined && dc !== undefined && sl !== undefined && { tg, dc, sl };
  }, 20_000);
}

const slackStatuses = (slack: FakeSlack) => slack.callsTo('assistant.threads.setStatus');

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

describe('typing while a turn runs (end to end)', { timeout: 60_000 }, () => {
  describe('when the pipeline takes 3 s to answer', () => {
    it('shows typing on Telegram, Discord and a Slack assistant thread from the start of the turn, and none after the reply', async () => {
      const platforms = await setUp('{}', TURN_MS);
      const { telegram, discord, slack } = platforms;
      const sentAt = Date.now();
      await sendAll(platforms);

      const replied = await repliedAt(platforms);
      const tgTyping = telegram.callsOf('sendChatAction');
      const dcTyping = discord.typings();
      expect(tgTyping.length).toBeGreaterThanOrEqual(1);
      expect(tgTyping[0]?.body).toEqual({ chat_id: TG_CHAT.id, action: 'typing' });
      expect(dcTyping.map((typing) => typing.channelId)).toContain(DISCORD_DM);
      // Typing began with the turn, well before the answer.
      expect((tgTyping[0]?.at ?? Number.POSITIVE_INFINITY) - sentAt).toBeLessThan(TURN_MS);
      expect((dcTyping[0]?.at ?? Number.POSITIVE_INFINITY) - sentAt).toBeLessThan(TURN_MS);
      const slTyping = slackStatuses(slack);
      expect(slTyping.map((call) => call.body)).toEqual([
        expect.objectContaining({ channel_id: SLACK_DM, thread_ts: SLACK_THREAD, status: 'is typing...' }),
      ]);
      expect((slTyping[0]?.at ?? Number.POSITIVE_INFINITY) - sentAt).toBeLessThan(TURN_MS);

      // A typing loop left running would call again one interval after its first call: wait
      // until that moment has passed on both platforms, then no call may follow the reply.
      const firstTyping = Math.min(tgTyping[0]?.at ?? 0, dcTyping[0]?.at ?? 0);
      await pause(firstTyping + DISCORD_TYPING_INTERVAL_MS + 500 - Date.now());
      expect(TELEGRAM_TYPING_INTERVAL_MS).toBeLessThan(DISCORD_TYPING_INTERVAL_MS);
      expect(telegram.callsOf('sendChatAction').filter((call) => call.at > replied.tg)).toEqual([]);
      expect(discord.typings().filter((typing) => typing.at > replied.dc)).toEqual([]);
      expect(slackStatuses(slack).filter((call) => call.at > replied.sl)).toEqual([]);
    });
  });

  describe('when outbound.typing is false', () => {
    it('sends no typing signal while the turn runs', async () => {
      const platforms = await setUp('{ typing: false }', 1_000);
      await sendAll(platforms);
      await repliedAt(platforms);
      expect(platforms.telegram.callsOf('sendChatAction')).toEqual([]);
      expect(platforms.discord.typings()).toEqual([]);
      expect(slackStatuses(platforms.slack)).toEqual([]);
    });
  });
});
