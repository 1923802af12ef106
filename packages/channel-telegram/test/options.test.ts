import { describe, expect, it } from 'vitest';
import { TelegramChannelSchema } from '../src/options.js';

const channel = { id: 'c', type: 'telegram', token: 't' } as const;

describe('TelegramChannelSchema', () => {
  describe('when a telegram channel is configured', () => {
    it('defaults telegram to polling and requires a webhook block in webhook mode', () => {
      expect(TelegramChannelSchema.parse(channel)).toMatchObject({ mode: 'polling', webhook: undefined });
      const missing = TelegramChannelSchema.safeParse({ ...channel, mode: 'webhook' });
      expect(missing.error?.issues.map((issue) => [issue.path, issue.message])).toEqual([
        [['webhook'], 'required when mode is webhook'],
      ]);
      const webhook = TelegramChannelSchema.parse({
        ...channel,
        mode: 'webhook',
        webhook: { secret_token: 'abc_123' },
      });
      expect(webhook).toMatchObject({ webhook: { secretToken: 'abc_123', url: undefined } });
    });
  });
});
