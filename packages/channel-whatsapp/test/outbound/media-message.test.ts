import type { Attachment } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { checkWhatsAppAttachments, renderMediaMessage } from '../../src/outbound/media-message.js';

const base64Of = (bytes: number) => Buffer.alloc(bytes).toString('base64');

describe('renderMediaMessage', () => {
  it('makes a file a document with its name, an image and audio without one', () => {
    const link = { link: 'https://example.com/files/q3.pdf' };
    expect(renderMediaMessage({ type: 'file', url: link.link }, link)).toEqual({
      type: 'document',
      document: { link: link.link, filename: 'q3.pdf' },
    });
    expect(renderMediaMessage({ type: 'image', data: base64Of(3), name: 'a.png' }, { id: '7' })).toEqual({
      type: 'image',
      image: { id: '7' },
    });
    expect(renderMediaMessage({ type: 'audio', data: base64Of(3) }, { id: '8' })).toEqual({
      type: 'audio',
      audio: { id: '8' },
    });
  });
});

describe('checkWhatsAppAttachments', () => {
  const check = (attachment: Attachment) => () =>
    checkWhatsAppAttachments([{ attachments: [attachment] }], 'wa');

  describe('when every attachment fits Meta’s supported media types', () => {
    it('passes a mime type with parameters, a link without one, a document type', () => {
      expect(check({ type: 'audio', data: base64Of(3), mime_type: 'audio/ogg; codecs=opus' })).not.toThrow();
      expect(check({ type: 'image', url: 'https://example.com/a' })).not.toThrow();
      expect(check({ type: 'file', data: base64Of(3), mime_type: 'application/pdf' })).not.toThrow();
    });
  });

  describe('when one does not', () => {
    it.each([
      [
        'an image past 5 MB',
        { type: 'image', data: base64Of(5 * 1024 * 1024 + 3), mime_type: 'image/png' },
        'at most 5242880 bytes',
      ],
      [
        'audio of another type',
        { type: 'audio', url: 'https://example.com/a.wav', mime_type: 'audio/wav' },
        'does not take audio/wav as audio',
      ],
      [
        'a document of another type',
        { type: 'file', data: base64Of(3), mime_type: 'application/zip' },
        'does not take application/zip as a document',
      ],
    ] as const)('throws a final SB_CHANNEL_ATTACHMENT_REFUSED for %s', (_case, attachment, problem) => {
      expect(check(attachment)).toThrow(expect.objectContaining({ code: 'SB_CHANNEL_ATTACHMENT_REFUSED' }));
      expect(check(attachment)).toThrow(`replies[0].attachments[0]: `);
      expect(check(attachment)).toThrow(problem);
    });
  });
});
