import { type Attachment, isSwitchboardError } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { refuseAttachments } from '../../src/outbound/refuse-attachments.js';

describe('refuseAttachments', () => {
  const where = { type: 'line', channelId: 'ln' };

  describe('when the channel refuses only some attachments', () => {
    const httpsImagesOnly = (attachment: Attachment) =>
      attachment.type === 'image' && attachment.url?.startsWith('https:') ? undefined : 'only https images';

    it('lets the send go on when it can send every one', () => {
      expect(() =>
        refuseAttachments(
          [{ text: 'a', attachments: [{ type: 'image', url: 'https://example.com/a.png' }] }],
          where,
          httpsImagesOnly,
        ),
      ).not.toThrow();
    });

    it('throws a final SB_CHANNEL_ATTACHMENTS_UNSUPPORTED naming each refused attachment and why', () => {
      let thrown: unknown;
      try {
        refuseAttachments(
          [
            {
              attachments: [
                { type: 'image', url: 'https://example.com/a.png' },
                { type: 'file', data: 'AAAA' },
              ],
            },
            { text: 'b', attachments: [{ type: 'image', url: 'http://example.com/b.png' }] },
          ],
          where,
          httpsImagesOnly,
        );
      } catch (error) {
        thrown = error;
      }
      expect(isSwitchboardError(thrown, 'SB_CHANNEL_ATTACHMENTS_UNSUPPORTED')).toBe(true);
      expect((thrown as Error).message).toBe(
        'line channel "ln" cannot send replies[0].attachments[1] (file): only https images; replies[1].attachments[0] (image): only https images',
      );
      expect((thrown as { details: unknown }).details).toEqual({
        channel: 'ln',
        refused: [
          { reply: 0, attachment: 1, type: 'file', reason: 'only https images' },
          { reply: 1, attachment: 0, type: 'image', reason: 'only https images' },
        ],
      });
      expect((thrown as { retryable: boolean }).retryable).toBe(false);
    });
  });
});
