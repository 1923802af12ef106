import { describe, expect, it } from 'vitest';
import { type MessageCalls, sendParts, showPreview } from '../../src/outbound/message-calls.js';
import { createPostedTexts } from '../../src/outbound/posted-texts.js';

function recordingCalls(failOn?: string) {
  const calls: string[] = [];
  let next = 0;
  const platform: MessageCalls<string> = {
    async post(message) {
      calls.push(`post ${message}`);
      if (message === failOn) throw new Error('refused');
      next += 1;
      return `m${next}`;
    },
    async edit(message, ref) {
      calls.push(`edit ${ref} ${message}`);
    },
  };
  return { calls, platform };
}

describe('sendParts', () => {
  describe('without a draft', () => {
    it('posts every part in order', async () => {
      const { calls, platform } = recordingCalls();
      await sendParts(['a', 'b'], platform);
      expect(calls).toEqual(['post a', 'post b']);
    });
  });

  describe('with a draft', () => {
    it('edits the draft into the first part and posts the rest', async () => {
      const { calls, platform } = recordingCalls();
      await sendParts(['a', 'b'], platform, 'm7');
      expect(calls).toEqual(['edit m7 a', 'post b']);
    });

    it('edits it into the first text when files come first, and posts the files', async () => {
      const { calls, platform } = recordingCalls();
      const withFiles = { ...platform, editable: (part: string) => !part.startsWith('file:') };
      await sendParts(['file:a.png', 'text', 'more'], withFiles, 'm7');
      expect(calls).toEqual(['post file:a.png', 'edit m7 text', 'post more']);
    });
  });

  describe('when a post fails', () => {
    it('rejects and sends nothing after it', async () => {
      const { calls, platform } = recordingCalls('b');
      await expect(sendParts(['a', 'b', 'c'], platform)).rejects.toThrow('refused');
      expect(calls).toEqual(['post a', 'post b']);
    });
  });

  describe('when a send that failed is tried again with the parts remembered', () => {
    it('skips the parts it posted before and posts the rest', async () => {
      const remembered = { posted: createPostedTexts({ maxAgeMs: 60_000 }), answering: 'turn-1' };
      const first = recordingCalls('b');
      await expect(sendParts(['a', 'b', 'c'], first.platform, undefined, remembered)).rejects.toThrow(
        'refused',
      );
      const again = recordingCalls();
      await sendParts(['a', 'b', 'c'], again.platform, undefined, remembered);
      expect(again.calls).toEqual(['post b', 'post c']);
    });

    it('edits the draft again, and posts the parts of another answer', async () => {
      const remembered = { posted: createPostedTexts({ maxAgeMs: 60_000 }), answering: 'turn-1' };
      await expect(
        sendParts(['a', 'b', 'c'], recordingCalls('c').platform, 'm7', remembered),
      ).rejects.toThrow('refused');
      const again = recordingCalls();
      await sendParts(['a', 'b', 'c'], again.platform, 'm7', remembered);
      await sendParts(['a', 'b'], again.platform, undefined, { ...remembered, answering: 'turn-2' });
      expect(again.calls).toEqual(['edit m7 a', 'post c', 'post a', 'post b']);
    });

    it('does not remember the last part: a send that posted it is not tried again', async () => {
      const posted = createPostedTexts({ maxAgeMs: 60_000 });
      await sendParts(['a', 'b'], recordingCalls().platform, undefined, { posted, answering: 'turn-1' });
      expect(posted.has({ answering: 'turn-1', index: 0, text: 'a' })).toBe(true);
      expect(posted.has({ answering: 'turn-1', index: 1, text: 'b' })).toBe(false);
    });
  });
});

describe('showPreview', () => {
  describe('without a draft', () => {
    it('posts the first part and resolves with its ref', async () => {
      const { calls, platform } = recordingCalls();
      expect(await showPreview(['a', 'b'], platform, undefined)).toBe('m1');
      expect(calls).toEqual(['post a']);
    });
  });

  describe('with a draft', () => {
    it('edits it and resolves with the same ref', async () => {
      const { calls, platform } = recordingCalls();
      expect(await showPreview(['a', 'b'], platform, 'm3')).toBe('m3');
      expect(calls).toEqual(['edit m3 a']);
    });
  });

  describe('when there is nothing to show', () => {
    it('rejects with a final SB_CHANNEL_SEND_FAILED and calls nothing', async () => {
      const { calls, platform } = recordingCalls();
      await expect(showPreview([], platform, undefined)).rejects.toMatchObject({
        code: 'SB_CHANNEL_SEND_FAILED',
        retryable: false,
      });
      expect(calls).toEqual([]);
    });
  });
});
