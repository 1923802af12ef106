import type { Reply } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { afterEach, describe, expect, it } from 'vitest';
import { type LineGateway, startLineGateway } from './harness.js';

const USER = `U${'01'.repeat(16)}`;
const CHART = 'https://cdn.example.com/charts/chart.png';

/** What the pipeline answers each text with. */
const ANSWERS: Record<string, Reply[]> = {
  chart: [
    { text: 'here is your chart', attachments: [{ type: 'image', url: CHART, mime_type: 'image/png' }] },
  ],
  refused: [
    {
      text: 'these cannot go',
      attachments: [
        { type: 'image', url: CHART },
        { type: 'image', data: 'iVBORw0KGgo=' },
        { type: 'image', url: 'http://cdn.example.com/plain.png' },
        { type: 'file', url: 'https://cdn.example.com/report.pdf' },
        { type: 'audio', url: 'https://cdn.example.com/voice.m4a' },
      ],
    },
  ],
};

let gateway: LineGateway | undefined;
afterEach(async () => {
  await gateway?.stop();
  gateway = undefined;
});

async function start(): Promise<LineGateway> {
  gateway = await startLineGateway({ answer: (text) => ANSWERS[text] ?? [`echo: ${text}`] });
  return gateway;
}

describe('createLineChannel sending attachments', () => {
  describe('when a reply carries an image at an https url and a text', () => {
    it('replies with an image message (the url as original and preview), then the text, in one call', async () => {
      const { fake, webhookUrl } = await start();
      await fake.deliverWebhook(webhookUrl, [fake.textEvent({ text: 'chart' })]);

      await fake.waitForDelivered(USER, 1);
      expect(
        fake.sent().map(({ via, type, originalContentUrl, previewImageUrl, text }) => ({
          via,
          type,
          ...(type === 'image' ? { originalContentUrl, previewImageUrl } : { text }),
        })),
      ).toEqual([
        { via: 'reply', type: 'image', originalContentUrl: CHART, previewImageUrl: CHART },
        { via: 'reply', type: 'text', text: 'here is your chart' },
      ]);
      expect(fake.callsTo('reply')).toHaveLength(1);
    });
  });

  describe('when LINE answers the call 500', () => {
    it('is tried again, as a push with a retry key, and every message arrives once', async () => {
      const { fake, webhookUrl, outcomes } = await start();
      fake.failNext('reply', 1, { kind: 'http_status', status: 500 });
      await fake.deliverWebhook(webhookUrl, [fake.textEvent({ text: 'chart' })]);

      await eventually(() => outcomes.some((outcome) => outcome.kind === 'completed'));
      expect(fake.callsTo('reply').map((call) => call.status)).toEqual([500]);
      expect(fake.callsTo('push').map((call) => call.status)).toEqual([200]);
      expect(fake.callsTo('push')[0]?.retryKey).toBeDefined();
      expect(fake.sent().map(({ via, type }) => [via, type])).toEqual([
        ['push', 'image'],
        ['push', 'text'],
      ]);
    });
  });

  describe('when a reply carries attachments LINE cannot send', () => {
    it('sends nothing and dead-letters the delivery, naming each refused attachment and why', async () => {
      const { fake, webhookUrl, outcomes } = await start();
      await fake.deliverWebhook(webhookUrl, [fake.textEvent({ text: 'refused' })]);

      const dead = await eventually(() => outcomes.find((outcome) => outcome.kind === 'dead_lettered'));
      expect(dead.reason).toBe('delivery_failed');
      expect(dead.error?.code).toBe('SB_CHANNEL_ATTACHMENTS_UNSUPPORTED');
      expect(dead.error?.message).toBe(
        [
          'line channel "ln" cannot send replies[0].attachments[1] (image): LINE fetches an image from a public HTTPS URL and takes no bytes: give a url, not data',
          'replies[0].attachments[2] (image): LINE fetches an image from a public HTTPS URL only: the url is not https',
          'replies[0].attachments[3] (file): LINE bots have no file message (send a link in the text)',
          "replies[0].attachments[4] (audio): LINE's audio message needs the track's duration, which an attachment does not carry",
        ].join('; '),
      );
      // Refused before any call: tried once, not again.
      expect(fake.callsTo('reply')).toEqual([]);
      expect(fake.callsTo('push')).toEqual([]);
    });
  });
});
