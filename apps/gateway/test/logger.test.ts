import { describe, expect, it } from 'vitest';
import { createSecretMasker } from '@switchboard/core';
import { createRootLogger } from '../src/logger.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  return { lines, stream: { write: (line: string) => void lines.push(JSON.parse(line)) } };
}

describe('root logger', () => {
  describe('when a log line carries secrets', () => {
    it('redacts tokens, signing secrets, API keys and authorization headers', () => {
      const { lines, stream } = capture();
      const logger = createRootLogger({ level: 'info', destination: stream });
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

  describe('when a line quotes a configured secret outside the redaction paths', () => {
    it('masks it in the message, the error and its cause, and keeps the line valid JSON', () => {
      const token = '123456789:AAH-logger-secret';
      const { lines, stream } = capture();
      const logger = createRootLogger({
        level: 'info',
        destination: stream,
        mask: createSecretMasker([token]),
      });
      const err = new Error(`Bad Request: /bot${token}/sendMessage`, {
        cause: new Error(`connect to https://api.example/bot${token}`),
      });

      logger.warn({ err, description: `echoed ${token}` }, `send failed for ${token}`);

      const text = JSON.stringify(lines);
      expect(text).not.toContain(token);
      expect(lines[0]).toMatchObject({
        msg: 'send failed for ***',
        description: 'echoed ***',
        err: { message: expect.stringContaining('Bad Request: /bot***/sendMessage') },
      });
      // pino prints the cause inside the error's stack.
      expect(text).toContain('https://api.example/bot***');
    });
  });
});
