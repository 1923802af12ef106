import { describe, expect, it } from 'vitest';
import { createRootLogger } from '../src/logger.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  return { lines, stream: { write: (line: string) => void lines.push(JSON.parse(line)) } };
}

describe('root logger', () => {
  describe('when a log line carries secrets', () => {
    it('redacts tokens, signing secrets, API keys and authorization headers', () => {
      const { lines, stream } = capture();
      const logger = createRootLogger('info', stream);
      logger.info(
        {
          channel: {
            id: 'tg',
            token: '123:secret',
            botToken: 'xoxb-secret',
            signingSecret: 'shh',
            apiKeys: ['k'],
          },
          options: { api_key: 'sk-secret' },
          req: { headers: { authorization: 'Bearer secret' } },
        },
        'config loaded',
      );
      const text = JSON.stringify(lines);
      for (const secret of ['123:secret', 'xoxb-secret', 'shh', 'sk-secret', 'Bearer secret', '"k"']) {
        expect(text).not.toContain(secret);
      }
      expect(lines[0]).toMatchObject({ msg: 'config loaded', service: 'switchboard', channel: { id: 'tg' } });
    });
  });
});
