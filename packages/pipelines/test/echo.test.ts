import { describe, expect, it } from 'vitest';
import { createEchoPipeline } from '../src/echo.js';
import { queryOf, runContext } from './query.js';

describe('createEchoPipeline', () => {
  describe('when a burst of messages was merged into one turn', () => {
    it('replies once with the merged text', async () => {
      const pipeline = createEchoPipeline('echo');

      const result = await pipeline.run(queryOf(['hello', 'again']), runContext());

      expect(pipeline.id).toBe('echo');
      expect(result).toEqual({ replies: [{ text: 'hello\nagain' }] });
    });
  });
});
