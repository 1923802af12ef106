import { describe, expect, it } from 'vitest';
import {
  MAX_ATTACHMENT_BYTES,
  MAX_ATTACHMENTS_PER_REPLY,
  PipelineAnswerSchema,
  ReplySchema,
} from '../../src/model/message.js';
import { formatIssues } from '../../src/model/validation.js';

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).toString('base64');

/** The `path: problem` lines an answer of `replies` is refused with. */
function problemsOf(replies: unknown[]): string[] {
  const result = PipelineAnswerSchema.safeParse({ replies });
  if (result.success) return [];
  return formatIssues(result.error);
}

describe('ReplySchema', () => {
  describe('when a reply has a text, attachments or both', () => {
    it('accepts each', () => {
      expect(ReplySchema.parse({ text: 'hi' })).toEqual({ text: 'hi' });
      const image = { type: 'image', data: PNG, name: 'a.png', mime_type: 'image/png' };
      expect(ReplySchema.parse({ attachments: [image] })).toEqual({ attachments: [image] });
      const file = { type: 'file', url: 'https://example.com/report.pdf' };
      expect(ReplySchema.parse({ text: 'see', attachments: [file] })).toEqual({
        text: 'see',
        attachments: [file],
      });
    });
  });

  describe('when a reply has neither', () => {
    it('is refused naming the reply', () => {
      expect(problemsOf([{ text: 'ok' }, {}])).toEqual([
        'replies[1]: needs a text or at least one attachment',
      ]);
      expect(problemsOf([{ attachments: [] }])).toEqual([
        'replies[0]: needs a text or at least one attachment',
      ]);
    });
  });

  describe('when an attachment is invalid', () => {
    it('names the field of bad base64', () => {
      expect(
        problemsOf([
          {
            attachments: [
              { type: 'image', data: PNG },
              { type: 'image', data: 'no base64!' },
            ],
          },
        ]),
      ).toEqual(['replies[0].attachments[1].data: must be standard base64 (A-Z a-z 0-9 + /, padded with =)']);
    });

    it('names the field of data past the size cap', () => {
      const data = 'A'.repeat(Math.ceil((MAX_ATTACHMENT_BYTES + 1) / 3) * 4);
      expect(problemsOf([{ attachments: [{ type: 'file', data }] }])).toEqual([
        `replies[0].attachments[0].data: must decode to at most ${MAX_ATTACHMENT_BYTES} bytes`,
      ]);
      const atCap = 'A'.repeat(Math.floor(MAX_ATTACHMENT_BYTES / 3) * 4);
      expect(problemsOf([{ attachments: [{ type: 'file', data: atCap }] }])).toEqual([]);
    });

    it('names an attachment with both url and data, or neither', () => {
      expect(
        problemsOf([{ attachments: [{ type: 'image', data: PNG, url: 'https://example.com/a.png' }] }]),
      ).toEqual(['replies[0].attachments[0].data: give url or data, not both']);
      expect(problemsOf([{ attachments: [{ type: 'image' }] }])).toEqual([
        'replies[0].attachments[0]: needs one of url or data',
      ]);
    });

    it('refuses a url that is not http or https, and an unknown type', () => {
      expect(problemsOf([{ attachments: [{ type: 'image', url: 'file:///etc/passwd' }] }])).toEqual([
        'replies[0].attachments[0].url: must be an http or https URL',
      ]);
      expect(
        problemsOf([{ attachments: [{ type: 'video', url: 'https://example.com/a.mp4' }] }]),
      ).toHaveLength(1);
    });

    it('refuses more attachments than a reply may carry', () => {
      const many = Array.from({ length: MAX_ATTACHMENTS_PER_REPLY + 1 }, () => ({
        type: 'image',
        data: PNG,
      }));
      expect(problemsOf([{ attachments: many }])).toEqual([
        expect.stringMatching(/^replies\[0\]\.attachments: /),
      ]);
    });
  });
});
