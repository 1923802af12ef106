import { isSwitchboardError } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { refuseAttachments } from '../../src/outbound/refuse-attachments.js';

describe('refuseAttachments', () => {
  const where = { type: 'line', channelId: 'ln' };

  describe('when no reply carries an attachment', () => {
    it('lets the send go on', () => {
      expect(() => refuseAttachments([{ text: 'a' }, { text: 'b', attachments: [] }], where)).not.toThrow();
    });
  });

  describe('when a reply carries one', () => {
    it('throws a final SB_CHANNEL_ATTACHMENTS_UNSUPPORTED naming the channel and the reply', () => {
      let thrown: unknown;
      try {
        refuseAttachments(
          [{ text: 'a' }, { attachments: [{ type: 'image', url: 'https://example.com/a.png' }] }],
          where,
        );
      } catch (error) {
        thrown = error;
      }
      expect(isSwitchboardError(thrown, 'SB_CHANNEL_ATTACHMENTS_UNSUPPORTED')).toBe(true);
      expect((thrown as Error).message).toBe(
        'line channel "ln" cannot send attachments yet: replies[1] carries 1',
      );
      expect((thrown as { retryable: boolean }).retryable).toBe(false);
    });
  });
});
