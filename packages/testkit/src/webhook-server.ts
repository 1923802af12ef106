import { httpErrorHandler } from '@switchboard/http';
import Fastify, { type FastifyInstance } from 'fastify';

/**
 * The HTTP servers a conformance harness mounts webhook adapters on, one adapter at a time, each
 * with the gateway's error answers.
 */
export interface WebhookServers {
  /** A new server for the next adapter (the previous one is closed). */
  next(): FastifyInstance;
  /** `http://127.0.0.1:<port><path>` on the current server, which listens from the first call. */
  url(path: string): Promise<string>;
  close(): Promise<void>;
}

export function webhookServers(): WebhookServers {
  let server: FastifyInstance | undefined;
  let listening: Promise<string> | undefined;
  return {
    next() {
      void server?.close();
      server = Fastify();
      server.setErrorHandler(httpErrorHandler);
      listening = undefined;
      return server;
    },
    async url(path) {
      if (server === undefined) throw new Error('no adapter created');
      listening ??= server.listen({ port: 0, host: '127.0.0.1' });
      return `${await listening}${path}`;
    },
    async close() {
      await server?.close();
    },
  };
}
