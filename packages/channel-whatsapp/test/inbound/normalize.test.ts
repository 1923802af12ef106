import { describe, expect, it } from 'vitest';
import { normalizeWhatsAppMessage } from '../../src/inbound/normalize.js';

const context = {
  channelId: 'wa',
  names: new Map<string, string>(),
  businessNumber: '15550783881',
  messageId: '01J0000000000000000000000',
  receivedAt: 1_000,
};
// The shape of `value.messages[]` in Meta's webhook reference.
const text = {
  from: '16505551234',
  id: 'wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=',
  timestamp: '1749416383',
  type: 'text',
  text: { body: 'Does it come in another color?' },
};

describe('normalizeWhatsAppMessage', () => {
  describe('when the message is text', () => {
    it('is a direct message from its sender, keyed by the wamid', () => {
      const message = normalizeWhatsAppMessage(text, {
        ...context,
        names: new Map([['16505551234', 'Sheena Nelson']]),
      });
      expect(message).toMatchObject({
        id: context.messageId,
        platform: 'whatsapp',
        channel: 'wa',
        chat: { type: 'person', id: '16505551234' },
        sender: { id: '16505551234', name: 'Sheena Nelson', is_bot: false },
        elements: [{ type: 'text', text: 'Does it come in another color?' }],
        text: 'Does it come in another color?',
        mentions_bot: false,
        platform_message_id: text.id,
        received_at: 1_000,
        raw: text,
      });
    });

    it("marks a message from the business's own number as the bot's", () => {
      const message = normalizeWhatsAppMessage({ ...text, from: '15550783881' }, context);
      expect(message?.sender).toEqual({ id: '15550783881', is_bot: true });
    });

    it('quotes the message it replies to', () => {
      const message = normalizeWhatsAppMessage(
        { ...text, context: { from: '15550783881', id: 'wamid.Q' } },
        context,
      );
      expect(message?.elements).toContainEqual({ type: 'quote', message_id: 'wamid.Q' });
    });
  });

  describe('when the message carries media', () => {
    it('has an image element keeping the media id, and the caption as the text', () => {
      const image = { id: '1479537139650973', mime_type: 'image/jpeg', sha256: 'h', caption: 'this one' };
      const message = normalizeWhatsAppMessage({ ...text, type: 'image', text: undefined, image }, context);
      expect(message?.elements).toEqual([
        { type: 'text', text: 'this one' },
        { type: 'image', file_id: '1479537139650973', mime_type: 'image/jpeg' },
      ]);
      expect(message?.text).toBe('this one');
    });

    it('has a voice element for audio, with empty text', () => {
      const audio = { id: '1003383421387256', mime_type: 'audio/ogg; codecs=opus', voice: true };
      const message = normalizeWhatsAppMessage({ ...text, type: 'audio', text: undefined, audio }, context);
      expect(message?.elements).toEqual([
        { type: 'voice', file_id: '1003383421387256', mime_type: 'audio/ogg; codecs=opus' },
      ]);
      expect(message?.text).toBe('');
    });

    it('has an audio element for an audio file sent, and a video element for a video', () => {
      const audio = { id: '1003383421387257', mime_type: 'audio/mpeg', voice: false };
      const video = { id: '1003383421387258', mime_type: 'video/mp4', caption: 'look' };
      expect(
        normalizeWhatsAppMessage({ ...text, type: 'audio', text: undefined, audio }, context)?.elements,
      ).toEqual([{ type: 'audio', file_id: '1003383421387257', mime_type: 'audio/mpeg' }]);
      expect(
        normalizeWhatsAppMessage({ ...text, type: 'video', text: undefined, video }, context)?.elements,
      ).toEqual([
        { type: 'text', text: 'look' },
        { type: 'video', file_id: '1003383421387258', mime_type: 'video/mp4' },
      ]);
    });

    it('has a file element with the file name for a document', () => {
      const document = { id: '1376223850470843', filename: 'invoice.pdf', mime_type: 'application/pdf' };
      const message = normalizeWhatsAppMessage(
        { ...text, type: 'document', text: undefined, document },
        context,
      );
      expect(message?.elements).toEqual([
        { type: 'file', file_id: '1376223850470843', name: 'invoice.pdf', mime_type: 'application/pdf' },
      ]);
    });
  });

  describe('when the message shares a location', () => {
    it('has a location element with the coordinates, name and address', () => {
      const location = {
        latitude: 37.4848,
        longitude: -122.1484,
        name: 'Philz Coffee',
        address: '101 Forest Ave',
      };
      const message = normalizeWhatsAppMessage(
        { ...text, type: 'location', text: undefined, location },
        context,
      );
      expect(message?.elements).toEqual([{ type: 'location', ...location }]);
      expect(message?.text).toBe('');
    });
  });

  describe('when the user taps a reply of an interactive message', () => {
    it.each([
      ['button_reply', { type: 'button_reply', button_reply: { id: 'yes', title: 'Yes, please' } }],
      [
        'list_reply',
        { type: 'list_reply', list_reply: { id: 'r2', title: 'Yes, please', description: 'd' } },
      ],
    ])('gives the title of a %s as the text, quoting the message tapped', (_kind, interactive) => {
      const message = normalizeWhatsAppMessage(
        { ...text, type: 'interactive', text: undefined, interactive, context: { id: 'wamid.ASK' } },
        context,
      );
      expect(message?.text).toBe('Yes, please');
      expect(message?.elements).toEqual([
        { type: 'text', text: 'Yes, please' },
        { type: 'quote', message_id: 'wamid.ASK' },
      ]);
    });

    it("gives a template's quick-reply button text as the text", () => {
      const button = { payload: 'STOP', text: 'Stop promotions' };
      const message = normalizeWhatsAppMessage({ ...text, type: 'button', text: undefined, button }, context);
      expect(message?.text).toBe('Stop promotions');
    });
  });

  describe('when the message is of another kind', () => {
    it('is null for the reply to a flow', () => {
      const interactive = { type: 'nfm_reply', nfm_reply: { name: 'flow', response_json: '{}' } };
      expect(
        normalizeWhatsAppMessage({ ...text, type: 'interactive', text: undefined, interactive }, context),
      ).toBeNull();
    });

    it.each(['sticker', 'reaction', 'contacts', 'unsupported', 'toString'])('is null for %s', (type) => {
      expect(normalizeWhatsAppMessage({ ...text, type, text: undefined }, context)).toBeNull();
    });
  });

  describe('when a field the gateway reads is malformed', () => {
    it.each([
      ['from', { ...text, from: '' }],
      ['id', { ...text, id: 7 }],
      ['text', { ...text, text: undefined }],
      ['image', { ...text, type: 'image', image: { caption: 'no id' } }],
      ['location', { ...text, type: 'location', location: { latitude: '37.4' } }],
      ['button_reply', { ...text, type: 'interactive', interactive: { type: 'button_reply' } }],
    ])('throws SB_HTTP_BAD_REQUEST naming %s', (field, message) => {
      expect(() => normalizeWhatsAppMessage(message, context)).toThrow(
        expect.objectContaining({ code: 'SB_HTTP_BAD_REQUEST', message: expect.stringContaining(field) }),
      );
    });
  });
});
