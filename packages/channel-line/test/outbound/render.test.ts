import { describe, expect, it } from 'vitest';
import { MAX_IMAGE_URL_CHARS, lineAttachmentRefusal, renderLineReplies } from '../../src/outbound/render.js';

const A = 'https://cdn.example.com/a.jpg';
const B = 'https://cdn.example.com/b.png';

describe('renderLineReplies', () => {
  describe('when replies carry images', () => {
    it("renders each reply's images as listed, then its text, reply after reply", () => {
      expect(
        renderLineReplies([
          {
            text: 'first',
            attachments: [
              { type: 'image', url: A },
              { type: 'image', url: B },
            ],
          },
          { attachments: [{ type: 'image', url: B }] },
          { text: 'last' },
        ]),
      ).toEqual([
        { type: 'image', originalContentUrl: A, previewImageUrl: A },
        { type: 'image', originalContentUrl: B, previewImageUrl: B },
        { type: 'text', text: 'first' },
        { type: 'image', originalContentUrl: B, previewImageUrl: B },
        { type: 'text', text: 'last' },
      ]);
    });
  });
});

describe('lineAttachmentRefusal', () => {
  describe('when the attachment is an image at an https url', () => {
    it('lets it go, JPEG and PNG alike', () => {
      expect(lineAttachmentRefusal({ type: 'image', url: A, mime_type: 'image/jpeg' })).toBeUndefined();
      expect(lineAttachmentRefusal({ type: 'image', url: B })).toBeUndefined();
    });

    it('compares the mime type without its parameters or case, as WhatsApp and Feishu do', () => {
      expect(lineAttachmentRefusal({ type: 'image', url: A, mime_type: 'image/JPEG' })).toBeUndefined();
      expect(
        lineAttachmentRefusal({ type: 'image', url: B, mime_type: 'image/png; charset=binary' }),
      ).toBeUndefined();
    });
  });

  describe('when LINE cannot take it', () => {
    it.each([
      ['a file', { type: 'file', url: A }, 'no file message'],
      ['audio', { type: 'audio', url: A }, "needs the track's duration"],
      ['data', { type: 'image', data: 'AAAA' }, 'give a url, not data'],
      ['an http url', { type: 'image', url: 'http://cdn.example.com/a.jpg' }, 'the url is not https'],
      [
        'a long url',
        { type: 'image', url: `${A}?${'x'.repeat(MAX_IMAGE_URL_CHARS)}` },
        'at most 2000 characters',
      ],
      ['a gif', { type: 'image', url: A, mime_type: 'image/gif' }, 'JPEG and PNG images only, not image/gif'],
    ] as const)('refuses %s, saying why', (_case, attachment, reason) => {
      expect(lineAttachmentRefusal(attachment)).toContain(reason);
    });
  });
});
