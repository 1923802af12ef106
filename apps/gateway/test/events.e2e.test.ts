import { type FakeDiscordUser, startFakeDiscord } from '@switchboard/testkit/discord';
import { metricValueAt } from '@switchboard/testkit/prometheus';
import {
  eventEnvelope,
  messageChangedEvent,
  messageEvent,
  reactionEvent,
  sendEvent,
  startFakeSlack,
} from '@switchboard/testkit/slack';
import { startFakeTelegram } from '@switchboard/testkit/telegram';
import { describe, expect, it } from 'vitest';
import { startFakePipeline } from './fake-pipeline.js';
import { type ServeProcess, eventually, get, serveYaml, useCleanups } from './serve-process.js';

// Edits, deletions and reactions on three platforms, through the real `switchboard serve` process
// and the platforms' own libraries (grammY, Bolt, discord.js) against the fake platform servers.

const cleanup = useCleanups();
const SIGNING_SECRET = 'events-secret';
const TG_CHAT = { id: 7001, first_name: 'Ann', type: 'private' };
const TG_USER = { id: 7001, is_bot: false, first_name: 'Ann' };
const SLACK_DM = 'D0EVENTS';
const DISCORD_DM = '1240000000000000042';
const alice: FakeDiscordUser = { id: '234567890123456789', username: 'alice', global_name: 'Alice' };

interface EventRequest {
  text: string;
  session: { chat_id: string };
  event: { type: string; message_id: string; emoji?: string } | null;
  messages: Array<{ platform_message_id: string; event: unknown }>;
}

/** Audit records of `outcome` for `channel`, once there are `count`. */
async function auditOf(gateway: ServeProcess, outcome: string, channel: string, count: number) {
  return eventually(async () => {
    const page = await get(`${gateway.url}/admin/audit?outcome=${outcome}&channel=${channel}`);
    const items = (page.body.items ?? []) as Record<string, unknown>[];
    return items.length >= count && items;
  });
}

describe('edits, deletions and reactions (end to end)', { timeout: 90_000 }, () => {
  describe('when an edit and a reaction arrive on Telegram, Slack and Discord', () => {
    it('routes the edits to the pipeline, whose answer is sent, discards the reactions by rule, and ignores and counts an unrouted deletion', async () => {
      const telegram = await startFakeTelegram();
      cleanup(() => telegram.close());
      const slack = await startFakeSlack();
      cleanup(() => slack.close());
      const discord = await startFakeDiscord();
      cleanup(() => discord.close());
      const backend = await startFakePipeline();
      cleanup(() => backend.close());
      backend.respond = async (request) => {
        const { event, text } = request as unknown as EventRequest;
        const reply = event === null ? `echo: ${text}` : `${event.type}: ${text}`;
        return { status: 200, body: { replies: [{ text: reply }] } };
      };
      const gateway = await serveYaml(
        `audit: { ignored: true }
channels:
  - { id: tg, type: telegram, token: "${telegram.token}", api_root: "${telegram.url}" }
  - { id: sl, type: slack, bot_token: xoxb-test, signing_secret: ${SIGNING_SECRET}, api_url: "${slack.apiUrl}", bot_user_id: UBOT }
  - { id: dc, type: discord, token: "${discord.token}", api_url: "${discord.url}" }
pipelines: [{ id: bot, type: http, url: "${backend.url}" }]
routing:
  default: bot
  rules:
    - { name: edits, type: event, events: [edited], pipeline: bot }
    - { name: drop-reactions, type: event, events: [reaction], pipeline: __discard__ }
`,
        { cleanup },
      );
      const requests = () => backend.requests as unknown as EventRequest[];

      // The originals, answered as messages.
      const tgOriginal = telegram.message({ chat: TG_CHAT, from: TG_USER, text: 'hello' });
      telegram.pushUpdate({ message: tgOriginal });
      const slOriginal = messageEvent({ channel: SLACK_DM, text: 'hello' });
      expect(
        (await sendEvent(gateway.url, 'sl', eventEnvelope(slOriginal), { signingSecret: SIGNING_SECRET }))
          .status,
      ).toBe(200);
      await eventually(() => discord.connected());
      const dcOriginal = discord.messageCreate({
        channel_id: DISCORD_DM,
        channel_type: 1,
        author: alice,
        content: 'hello',
      });
      await eventually(() => requests().filter((request) => request.event === null).length === 3);

      // The edits.
      telegram.pushUpdate({
        edited_message: { ...tgOriginal, text: 'hello, edited', edit_date: Math.floor(Date.now() / 1000) },
      });
      await sendEvent(gateway.url, 'sl', eventEnvelope(messageChangedEvent(slOriginal, 'hello, edited')), {
        signingSecret: SIGNING_SECRET,
      });
      discord.messageUpdate(dcOriginal, 'hello, edited');
      const edits = await eventually(() => {
        const seen = requests().filter((request) => request.event !== null);
        return seen.length === 3 && seen;
      });
      const original = new Map([
        [String(TG_CHAT.id), `${TG_CHAT.id}:${tgOriginal.message_id}`],
        [SLACK_DM, `${SLACK_DM}:${slOriginal.ts}`],
        [DISCORD_DM, String(dcOriginal.id)],
      ]);
      for (const edit of edits) {
        expect(edit.text).toBe('hello, edited');
        expect(edit.event).toEqual({ type: 'edited', message_id: original.get(edit.session.chat_id) });
        expect(edit.messages[0]?.platform_message_id).not.toBe(original.get(edit.session.chat_id));
      }

      // Their answers are sent, in reply to the edited message where the platform has replies.
      const tgReply = await eventually(() =>
        telegram.sentMessages().find((sent) => sent.body.text === 'edited: hello, edited'),
      );
      expect(tgReply.body.reply_parameters).toMatchObject({ message_id: tgOriginal.message_id });
      await eventually(() => slack.deliveredTo(SLACK_DM).includes('edited: hello, edited'));
      const dcReply = await eventually(() =>
        discord.sentMessages().find((sent) => sent.body.content === 'edited: hello, edited'),
      );
      expect(dcReply.body.message_reference).toMatchObject({ message_id: dcOriginal.id });

      // The reactions: discarded by the rule, audited with it.
      telegram.pushUpdate({
        message_reaction: {
          chat: TG_CHAT,
          message_id: tgOriginal.message_id,
          user: TG_USER,
          date: Math.floor(Date.now() / 1000),
          old_reaction: [],
          new_reaction: [{ type: 'emoji', emoji: '👍' }],
        },
      });
      await sendEvent(gateway.url, 'sl', eventEnvelope(reactionEvent(slOriginal, 'thumbsup')), {
        signingSecret: SIGNING_SECRET,
      });
      discord.reaction(dcOriginal, alice, '👍');
      for (const channel of ['tg', 'sl', 'dc']) {
        const [discarded] = await auditOf(gateway, 'discarded', channel, 1);
        expect(discarded).toMatchObject({ outcome: 'discarded', reason: 'rule', rule: 'drop-reactions' });
      }

      // A deletion no rule routes: ignored, not a turn, and counted.
      await sendEvent(
        gateway.url,
        'sl',
        eventEnvelope({
          type: 'message',
          subtype: 'message_deleted',
          hidden: true,
          channel: SLACK_DM,
          ts: `${slOriginal.ts}9`,
          deleted_ts: slOriginal.ts,
          previous_message: { type: 'message', user: slOriginal.user, text: 'hello', ts: slOriginal.ts },
        }),
        { signingSecret: SIGNING_SECRET },
      );
      discord.dispatch('MESSAGE_DELETE', { id: dcOriginal.id, channel_id: DISCORD_DM });
      for (const channel of ['sl', 'dc']) {
        const [ignored] = await auditOf(gateway, 'ignored', channel, 1);
        expect(ignored).toMatchObject({ reason: 'unrouted_event', rule: null });
        await eventually(
          async () =>
            (await metricValueAt(
              gateway.url,
              `switchboard_events_ignored_total{channel="${channel}",event="deleted"}`,
            )) === 1,
        );
      }
      expect(requests()).toHaveLength(6);
    });
  });
});
