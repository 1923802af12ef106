import { eventEnvelope, messageEvent, sendEvent, startFakeSlack } from '@switchboard/testkit/slack';
import { startFakeTelegram } from '@switchboard/testkit/telegram';
import { describe, expect, it } from 'vitest';
import { startFakePipeline } from './fake-pipeline.js';
import { eventually, serveYaml, useCleanups } from './serve-process.js';

const cleanup = useCleanups();
const SIGNING_SECRET = 'cross-platform-secret';
const COUNT = 20;

describe('several platforms at once (end to end)', () => {
  describe('when two Telegram chats and one Slack channel each send 20 messages with concurrency.pipeline 2', () => {
    it('keeps the order inside each chat, never runs more than 2 turns, and answers everything', {
      timeout: 120_000,
    }, async () => {
      const telegram = await startFakeTelegram();
      cleanup(() => telegram.close());
      const slack = await startFakeSlack();
      cleanup(() => slack.close());
      const backend = await startFakePipeline({ delayMs: 20 });
      cleanup(() => backend.close());
      const gateway = await serveYaml(
        `concurrency: { pipeline: 2 }
channels:
  - { id: tg, type: telegram, token: "${telegram.token}", api_root: "${telegram.url}" }
  - { id: sl, type: slack, bot_token: xoxb-test, signing_secret: ${SIGNING_SECRET}, api_url: "${slack.apiUrl}", bot_user_id: UBOT }
pipelines: [{ id: bot, type: http, url: "${backend.url}" }]
routing: { default: bot }
`,
        { cleanup },
      );

      const telegramChats = [
        { id: 5001, first_name: 'Ann', type: 'private' },
        { id: 5002, first_name: 'Ben', type: 'private' },
      ];
      const sent = new Map<string, string[]>();
      const note = (chat: string, text: string) => sent.set(chat, [...(sent.get(chat) ?? []), text]);
      for (let n = 0; n < COUNT; n++) {
        for (const chat of telegramChats) {
          const text = `tg-${chat.id}-${n}`;
          telegram.pushUpdate({
            message: telegram.message({
              chat,
              from: { id: chat.id, is_bot: false, first_name: chat.first_name },
              text,
            }),
          });
          note(String(chat.id), text);
        }
        const text = `sl-${n}`;
        const answer = await sendEvent(
          gateway.url,
          'sl',
          eventEnvelope(messageEvent({ channel: 'D0CROSS', text })),
          {
            signingSecret: SIGNING_SECRET,
          },
        );
        expect(answer.status).toBe(200);
        note('D0CROSS', text);
      }

      await eventually(() => backend.requests.length >= 3 * COUNT, 60_000);
      expect(backend.maxConcurrent).toBe(2);
      for (const [chat, texts] of sent) {
        expect(
          backend.requests
            .filter((request) => request.session.chat_id === chat)
            .map((request) => request.text),
        ).toEqual(texts);
      }

      const replies = await eventually(() => {
        const telegramReplies = telegram.sentMessages().map((message) => message.body);
        const slackReplies = slack.callsTo('chat.postMessage').map((call) => call.body);
        return (
          telegramReplies.length >= 2 * COUNT &&
          slackReplies.length >= COUNT && { telegramReplies, slackReplies }
        );
      }, 30_000);
      for (const chat of telegramChats) {
        const texts = replies.telegramReplies
          .filter((body) => body.chat_id === chat.id)
          .map((body) => body.text);
        expect(texts).toEqual(sent.get(String(chat.id))?.map((text) => `echo: ${text}`));
      }
      expect(replies.slackReplies.map((body) => body.text)).toEqual(
        sent.get('D0CROSS')?.map((text) => `echo: ${text}`),
      );
    });
  });
});
