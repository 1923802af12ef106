import { describe, expect, it } from 'vitest';
import { parseActivity } from '../../src/inbound/activity.js';
import { normalizeTeamsActivity } from '../../src/inbound/normalize.js';

const BOT = { id: '28:bot-app-id', name: 'Switchboard' };
const CONTEXT = { channelId: 'ms', messageId: 'm-1', receivedAt: 1_718_000_000_000 };

/** A message activity in the shape the Bot Connector posts (captured fields). */
function activity(fields: Record<string, unknown> = {}) {
  return {
    type: 'message',
    id: '1718000000123',
    timestamp: '2024-06-10T06:13:20.123Z',
    serviceUrl: 'https://smba.trafficmanager.net/amer/',
    channelId: 'msteams',
    from: { id: '29:1abc', name: 'Megan Bowen', aadObjectId: 'aad-1' },
    conversation: { conversationType: 'personal', id: 'a:1xyz', tenantId: 't-1' },
    recipient: BOT,
    textFormat: 'plain',
    text: 'hello',
    ...fields,
  };
}

function normalize(fields: Record<string, unknown> = {}) {
  const parsed = parseActivity(JSON.stringify(activity(fields)));
  if (!('message' in parsed)) throw new Error('not a message');
  return normalizeTeamsActivity(parsed.message, CONTEXT);
}

describe('normalizeTeamsActivity', () => {
  describe('when a person writes one to one', () => {
    it('is a person chat keyed on connector, conversation and activity id, the activity kept as raw', () => {
      const message = normalize();
      expect(message).toMatchObject({
        platform: 'teams',
        channel: 'ms',
        chat: { type: 'person', id: 'a:1xyz' },
        sender: { id: '29:1abc', name: 'Megan Bowen', is_bot: false },
        text: 'hello',
        elements: [{ type: 'text', text: 'hello' }],
        mentions_bot: false,
        platform_message_id: 'https%3A//smba.trafficmanager.net/amer:a%3A1xyz:1718000000123',
        received_at: CONTEXT.receivedAt,
      });
      expect(message.raw).toMatchObject({ serviceUrl: 'https://smba.trafficmanager.net/amer/' });
    });
  });

  describe('when a group message mentions the bot and someone else', () => {
    it('sets mentions_bot, drops the bot’s <at> text and shows the other as @Name', () => {
      const message = normalize({
        conversation: { conversationType: 'groupChat', id: '19:g@thread.v2', isGroup: true },
        text: '<at>Switchboard</at> ask <at>Adele</at> please',
        entities: [
          { type: 'mention', mentioned: BOT, text: '<at>Switchboard</at>' },
          { type: 'mention', mentioned: { id: '29:adele', name: 'Adele' }, text: '<at>Adele</at>' },
          { type: 'clientInfo', locale: 'en-US' },
        ],
      });
      expect(message.chat).toEqual({ type: 'group', id: '19:g@thread.v2' });
      expect(message.text).toBe('ask @Adele please');
      expect(message.mentions_bot).toBe(true);
      expect(message.elements.filter((element) => element.type === 'mention')).toEqual([
        { type: 'mention', user_id: BOT.id, name: 'Switchboard', is_bot_self: true },
        { type: 'mention', user_id: '29:adele', name: 'Adele', is_bot_self: false },
      ]);
    });

    it('does not set mentions_bot for a mention of someone else only', () => {
      const message = normalize({
        conversation: { conversationType: 'groupChat', id: '19:g@thread.v2', isGroup: true },
        text: '<at>Adele</at> hi',
        entities: [{ type: 'mention', mentioned: { id: '29:adele', name: 'Adele' }, text: '<at>Adele</at>' }],
      });
      expect(message.mentions_bot).toBe(false);
    });
  });

  describe('when an activity carries thousands of mentions and a long text', () => {
    it('strips every tag of the bot, shows the others and leaves unclosed tags as they are', () => {
      const botTexts = Array.from({ length: 3_000 }, (_, i) => `<at>Switchboard ${i}</at>`);
      const unclosed = '<at>'.repeat(20_000);
      const message = normalize({
        conversation: { conversationType: 'groupChat', id: '19:g@thread.v2', isGroup: true },
        text: [...botTexts, 'ask', '<at>Adele</at> '.repeat(2_000), unclosed, 'end'].join(' '),
        entities: [
          ...Array.from({ length: 3_000 }, (_, i) => ({
            type: 'mention',
            mentioned: { id: `29:user-${i}`, name: `User ${i}` },
            text: `<at>User ${i}</at>`,
          })),
          ...botTexts.map((text) => ({ type: 'mention', mentioned: BOT, text })),
        ],
      });
      expect(message.text).toBe(['ask', ...Array<string>(2_000).fill('@Adele'), unclosed, 'end'].join(' '));
      expect(message.mentions_bot).toBe(true);
      const mentions = message.elements.filter((element) => element.type === 'mention');
      expect(mentions).toHaveLength(6_000);
      expect(mentions[2_999]).toEqual({
        type: 'mention',
        user_id: '29:user-2999',
        name: 'User 2999',
        is_bot_self: false,
      });
      expect(mentions[5_999]).toEqual({
        type: 'mention',
        user_id: BOT.id,
        name: 'Switchboard',
        is_bot_self: true,
      });
    });
  });

  describe('when the message is in a channel’s reply chain', () => {
    it('is a group whose thread is the root post', () => {
      const message = normalize({
        conversation: {
          conversationType: 'channel',
          id: '19:c@thread.tacv2;messageid=1717999999999',
          isGroup: true,
        },
      });
      expect(message.chat).toEqual({ type: 'group', id: '19:c@thread.tacv2', thread: '1717999999999' });
    });
  });

  describe('when the message carries files or comes from the bot', () => {
    it('turns pictures into images and other files into files, skipping the HTML rendering', () => {
      const message = normalize({
        attachments: [
          { contentType: 'image/png', contentUrl: 'https://x/1.png' },
          { contentType: 'application/pdf', name: 'b.pdf', contentUrl: 'https://x/b.pdf' },
          { contentType: 'text/html', content: '<p>hello</p>' },
        ],
      });
      expect(message.elements.slice(1)).toEqual([
        { type: 'image', url: 'https://x/1.png' },
        { type: 'file', url: 'https://x/b.pdf', name: 'b.pdf' },
      ]);
    });

    it('gives a file shared in a personal chat its download link, not its SharePoint page', () => {
      const shared = {
        contentType: 'application/vnd.microsoft.teams.file.download.info',
        name: 'a.pdf',
        contentUrl: 'https://contoso.sharepoint.com/personal/megan/Documents/a.pdf',
        content: {
          downloadUrl:
            'https://contoso-my.sharepoint.com/personal/megan/_layouts/15/download.aspx?tempauth=x',
          uniqueId: '1150d938-8870-4044-9f2c-5bbdee2fb0d8',
          fileType: 'pdf',
        },
      };
      const message = normalize({ attachments: [shared, { ...shared, content: { fileType: 'pdf' } }] });
      expect(message.elements.slice(1)).toEqual([
        { type: 'file', url: shared.content.downloadUrl, name: 'a.pdf' },
        { type: 'file', name: 'a.pdf' },
      ]);
    });

    it("marks the bot's own message as from a bot", () => {
      expect(normalize({ from: BOT }).sender.is_bot).toBe(true);
    });
  });
});

describe('parseActivity', () => {
  it('reads any other activity type as one to acknowledge', () => {
    expect(parseActivity('{"type":"conversationUpdate","channelId":"msteams"}')).toEqual({
      other: 'conversationUpdate',
      channelId: 'msteams',
    });
  });

  it('reads an activity of another channel, or of none, as one to acknowledge, even a message', () => {
    expect(parseActivity(JSON.stringify(activity({ channelId: 'webchat' })))).toEqual({
      other: 'message',
      channelId: 'webchat',
    });
    expect(parseActivity(JSON.stringify(activity({ channelId: undefined })))).toEqual({
      other: 'message',
      channelId: null,
    });
  });

  it('names the bad field of a message activity, or the body that is not JSON', () => {
    expect(() => parseActivity(JSON.stringify(activity({ recipient: {} })))).toThrow(
      /^body\.recipient\.id: /,
    );
    expect(() => parseActivity('{not json')).toThrow(/^body: /);
    expect(() => parseActivity('{"id": 1}')).toThrow('body.type: expected a string');
  });
});
