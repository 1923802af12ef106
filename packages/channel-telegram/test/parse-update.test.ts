import { isSwitchboardError } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { parseUpdate } from '../src/inbound/parse-update.js';
import { editedMessage, forumTopicMessage, photoWithCaption } from './fixtures.js';

function problemsOf(body: unknown): string[] {
  try {
    parseUpdate(body);
  } catch (err) {
    if (isSwitchboardError(err, 'SB_HTTP_BAD_REQUEST'))
      return (err.details?.problems as string[] | undefined) ?? [err.message];
    throw err;
  }
  return [];
}

describe('parseUpdate', () => {
  describe('when the body is a real update', () => {
    it('returns it unchanged, whatever its kind', () => {
      for (const update of [forumTopicMessage, photoWithCaption, editedMessage])
        expect(parseUpdate(update)).toBe(update);
    });
  });

  describe('when the body is not an update', () => {
    it('refuses non-objects with SB_HTTP_BAD_REQUEST', () => {
      expect(problemsOf([1, 2])).toEqual([expect.stringMatching(/^body: .*expected object/)]);
      expect(problemsOf('hello')).toEqual([expect.stringMatching(/^body: .*expected object/)]);
    });

    it('names every bad field at once', () => {
      expect(
        problemsOf({
          update_id: '7',
          message: {
            message_id: 1,
            chat: { type: 'private' },
            from: { id: 2 },
            text: 5,
            entities: [{ type: 'mention', offset: -0.5 }],
          },
        }),
      ).toEqual([
        expect.stringMatching(/^body\.update_id: .*expected number, received string/),
        expect.stringMatching(/^body\.message\.date: /),
        expect.stringMatching(/^body\.message\.chat\.id: /),
        expect.stringMatching(/^body\.message\.from\.is_bot: /),
        expect.stringMatching(/^body\.message\.text: .*expected string/),
        expect.stringMatching(/^body\.message\.entities\[0\]\.offset: /),
        expect.stringMatching(/^body\.message\.entities\[0\]\.length: /),
      ]);
    });
  });
});
