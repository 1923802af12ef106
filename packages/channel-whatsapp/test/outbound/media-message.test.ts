import { describe, expect, it } from 'vitest';
import { renderMediaMessage, whatsAppAttachmentRefusal } from '../../src/outbound/media-message.js';

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

describe('whatsAppAttachmentRefusal', () => {
  describe('when an attachment fits Meta’s supported media types', () => {
    it.each([
      [
        'a mime type with parameters',
        { type: 'audio', data: base64Of(3), mime_type: 'audio/ogg; codecs=opus' },
      ],
      ['a link without a mime type', { type: 'image', url: 'https://example.com/a' }],
      ['a document type', { type: 'file', data: base64Of(3), mime_type: 'application/pdf' }],
    ] as const)('takes %s', (_case, attachment) => {
      expect(whatsAppAttachmentRefusal(attachment)).toBeUndefined();
    });
  });

  describe('when one does not', () => {
    it.each([
      [
        'an image past 5 MB',
        { type: 'image', data: base64Of(5 * 1024 * 1024 + 3), mime_type: 'image/png' },
        'an image is at most 5242880 bytes on WhatsApp',
      ],
      [
        'audio of another type',
        { type: 'audio', url: 'https://example.com/a.wav', mime_type: 'audio/wav' },
        'WhatsApp does not take audio/wav as audio',
      ],
      [
        'a document of another type',
        { type: 'file', data: base64Of(3), mime_type: 'application/zip' },
        'WhatsApp does not take application/zip as a document',
      ],
      [
        'data without a mime type',
        { type: 'file', data: base64Of(3) },
        'a data attachment needs a mime_type',
      ],
    ] as const)('names why for %s', (_case, attachment, problem) => {
      expect(whatsAppAttachmentRefusal(attachment)).toContain(problem);
    });
  });
});
