import { describe, expect, it, vi } from 'vitest';
import { createSecretMasker } from '@switchboard/core';
import { createRootLogger, withDeferredChildren } from '../src/logger.js';

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

describe('withDeferredChildren', () => {
  describe('when a child logs only below the level', () => {
    it('makes no pino child', () => {
      const { lines, stream } = capture();
      const root = createRootLogger({ level: 'info', destination: stream });
      const child = vi.spyOn(root, 'child');
      const turn = withDeferredChildren(root).child({ component: 'controller' }).child({ turn: 't1' });
      turn.debug({ durationMs: 3 }, 'pipeline answered');
      expect(child).not.toHaveBeenCalled();
      expect(lines).toEqual([]);
    });
  });

  describe('when a child logs at an enabled level', () => {
    it("writes the line pino's own child writes, bindings redacted alike", () => {
      const component = { component: 'controller' };
      const turn = { turn: 't1', options: { api_key: 'sk-secret' } };
      const direct = capture();
      const deferred = capture();
      const root = createRootLogger({ level: 'debug', destination: direct.stream });
      root.child(component).child(turn).debug({ attempt: 2 }, 'pipeline answered');
      const deferredRoot = createRootLogger({ level: 'debug', destination: deferred.stream });
      const logger = withDeferredChildren(deferredRoot).child(component).child(turn);
      logger.debug({ attempt: 2 }, 'pipeline answered');
      logger.warn({ attempt: 3 }, 'again');

      const withoutTime = ({ time: _, ...line }: Record<string, unknown>) => line;
      expect(deferred.lines.map(withoutTime)[0]).toEqual(withoutTime(direct.lines[0] ?? {}));
      expect(deferred.lines[0]).toMatchObject({ turn: 't1', options: { api_key: '[redacted]' } });
      expect(deferred.lines[1]).toMatchObject({ component: 'controller', turn: 't1', msg: 'again' });
    });
  });
});
