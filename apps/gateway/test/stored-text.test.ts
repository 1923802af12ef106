import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { describe, expect, it } from 'vitest';
import { keptMessage } from '../src/stored-text.js';

const withPhoto = inboundMessage({
  text: 'my passport',
  elements: [
    { type: 'image', file_id: 'AgACAgIAAxkBAAIB', mime_type: 'image/jpeg', size: 81_234 },
    { type: 'text', text: 'my passport' },
  ],
});

describe('keptMessage', () => {
  describe('when audit.store_text is none', () => {
    it('keeps no file reference, nor the text', () => {
      const kept = keptMessage(withPhoto, 'none');
      expect(kept.message.elements).toEqual([]);
      expect(JSON.stringify(kept.message)).not.toContain('AgACAgIAAxkBAAIB');
      expect(kept.whole).toBe(false);
    });
  });

  describe('when audit.store_text is a length', () => {
    it('keeps the file reference, for a replay, and cuts the text', () => {
      const kept = keptMessage(withPhoto, 2);
      expect(kept.message.elements).toEqual([
        { type: 'image', file_id: 'AgACAgIAAxkBAAIB', mime_type: 'image/jpeg', size: 81_234 },
        { type: 'text', text: 'my' },
      ]);
    });
  });
});
