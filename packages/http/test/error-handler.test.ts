import { SwitchboardError } from '@switchboard/core';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { httpErrorHandler, toHttpError } from '../src/index.js';

describe('httpErrorHandler', () => {
  async function serverThrowing(error: unknown) {
    const lines: string[] = [];
    const server = Fastify({
      logger: { level: 'info', stream: { write: (line: string) => lines.push(line) } },
      // As the gateway does: requests share the root logger, so no binding names the request.
      childLoggerFactory: (logger) => logger,
    });
    server.setErrorHandler(httpErrorHandler);
    server.get('/fail', async () => {
      throw error;
    });
    await server.ready();
    const response = await server.inject({ method: 'GET', url: '/fail' });
    await server.close();
    const logged = lines.map(
      (line) => JSON.parse(line) as { level: number; msg: string; reqId?: string; err?: { message: string } },
    );
    return { response, errors: logged.filter((entry) => entry.level >= 50) };
  }

  describe('when a handler throws an unexpected error', () => {
    it('answers 500 SB_HTTP_INTERNAL without its message or stack, and logs it at error level under err with the request id', async () => {
      const { response, errors } = await serverThrowing(
        new Error('connect to postgres://admin:hunter2@db failed'),
      );

      expect(response.statusCode).toBe(500);
      expect(response.json()).toEqual({
        error: { code: 'SB_HTTP_INTERNAL', message: 'internal error; see the gateway log' },
      });
      expect(response.body).not.toContain('hunter2');
      expect(errors).toHaveLength(1);
      expect(errors[0]?.err?.message).toContain('hunter2');
      expect(errors[0]?.reqId).toMatch(/^req-/);
    });
  });

  describe('when a handler throws a SwitchboardError', () => {
    it('answers with its status, code, message and details, and Retry-After in whole seconds', async () => {
      const { response, errors } = await serverThrowing(
        new SwitchboardError('SB_QUEUE_FULL', { retryAfterMs: 1500, details: { pending: 10 } }),
      );

      expect(response.statusCode).toBe(429);
      expect(response.headers['retry-after']).toBe('2');
      expect(response.json()).toEqual({
        error: { code: 'SB_QUEUE_FULL', message: 'the queue is full', details: { pending: 10 } },
      });
      expect(errors).toHaveLength(0);
    });

    it('logs server-side failures but not a drain', async () => {
      expect((await serverThrowing(new SwitchboardError('SB_STORE_UNAVAILABLE'))).errors).toHaveLength(1);
      expect((await serverThrowing(new SwitchboardError('SB_DRAINING'))).errors).toHaveLength(0);
    });
  });
});

describe('toHttpError', () => {
  describe('when fastify reports a client error without a mapping of its own', () => {
    it('keeps the status and message under an SB_HTTP code', () => {
      const error = Object.assign(new Error("Method 'PATCH' is not allowed"), {
        code: 'FST_ERR_SOMETHING',
        statusCode: 405,
      });
      expect(toHttpError(error)).toEqual({
        status: 405,
        code: 'SB_HTTP_BAD_REQUEST',
        message: "Method 'PATCH' is not allowed",
      });
    });
  });

  describe('when the thrown value is not an Error', () => {
    it('answers 500', () => {
      expect(toHttpError('a string')).toMatchObject({ status: 500, code: 'SB_HTTP_INTERNAL' });
      expect(toHttpError(null)).toMatchObject({ status: 500, code: 'SB_HTTP_INTERNAL' });
    });
  });
});
