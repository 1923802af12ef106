import { describe, expect, it } from 'vitest';
import { normalizeWhatsAppMessage } from '../../src/inbound/normalize.js';

const context = {
  channelId: 'wa',
  names: new Map<string, string>(),
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

    it('quotes the message it replies to', () => {
      const message = normalizeWhatsAppMessage(
        { ...text, context: { from: '15550783881', id: 'wamid.Q' } },
        context,
      );
      expect(message?.elements).toContainEqual({ type: 'quote', message_id: 'wamid.Q' });
    });
  });

  describe('when the message is of another kind', () => {
    it.each(['image', 'audio', 'reaction', 'location', 'unsupported'])('is null for %s', (type) => {
      expect(normalizeWhatsAppMessage({ ...text, type, text: undefined }, context)).toBeNull();
    });
  });

  describe('when a field the gateway reads is malformed', () => {
    it.each([
      ['from', { ...text, from: '' }],
      ['id', { ...text, id: 7 }],
      ['text', { ...text, text: undefined }],
    ])('throws SB_HTTP_BAD_REQUEST naming %s', (field, message) => {
      expect(() => normalizeWhatsAppMessage(message, context)).toThrow(
        expect.objectContaining({ code: 'SB_HTTP_BAD_REQUEST', message: expect.stringContaining(field) }),
      );
    });
  });
});
