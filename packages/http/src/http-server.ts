import type { Server } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { ConnectionError, FastifyHttpOptions, FastifyInstance, FastifyServerOptions } from 'fastify';
import { serializerCompiler } from 'fastify-type-provider-zod';
import { MAX_PARAM_LENGTH } from './id-length.js';
import { validatorCompiler } from './validator-compiler.js';
import { type HttpError, errorBody, httpErrorHandler } from './error-handler.js';
import type { ServerConfig } from './server-schema.js';

/**
 * The gateway's HTTP server: the fastify options that bound what one client can hold (a socket
 * for a slow request, a long path), and a close that ends within a deadline. The app builds its
 * server with them; the channel tests build theirs the same way.
 */

/**
 * How often Node looks for requests past their timeout. Its default, 30 s, let a client trickling
 * a body hold its socket up to 30 s past `server.request_timeout`.
 */
const TIMEOUT_CHECK_INTERVAL_MS = 1000;
/** The least `close` waits for answers already being written, even past the drain deadline. */
const CLOSE_GRACE_MS = 1000;

type SchemaController = NonNullable<FastifyServerOptions['schemaController']>;
/**
 * zod validates and serializes every schema'd part. Named at construction, fastify never loads
 * its own ajv and fast-json-stringify compilers (a tenth of the start's CPU, and their memory; the
 * gateway's bundle leaves them out). Every fastify instance of the gateway takes it.
 */
export const zodSchemaController: SchemaController = {
  // fastify types the factories by ajv's and fast-json-stringify's compile; it calls them with
  // the route definition the zod compilers take.
  compilersFactory: {
    buildValidator: () => validatorCompiler,
    buildSerializer: () => serializerCompiler,
  } as unknown as SchemaController['compilersFactory'],
};

/** The fastify options of the gateway's server, from the `server` section of the config. */
export function httpServerOptions(
  config: Pick<ServerConfig, 'bodyLimitBytes' | 'requestTimeoutMs'>,
): FastifyHttpOptions<Server> {
  const { requestTimeoutMs } = config;
  return {
    bodyLimit: config.bodyLimitBytes,
    // Headers and body together: a request is counted toward `max_concurrent_requests` only once
    // its body is in, so this is what keeps a client sending 1 byte/s from holding a socket.
    requestTimeout: requestTimeoutMs,
    http: {
      requestTimeout: requestTimeoutMs,
      headersTimeout: requestTimeoutMs,
      connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_INTERVAL_MS, requestTimeoutMs),
    },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    schemaController: zodSchemaController,
    // A bad URL or an over-long path parameter gets the one error shape, not fastify's own.
    frameworkErrors: httpErrorHandler,
    clientErrorHandler: answerClientError,
    // While closing, requests still arriving on open connections reach the routes, which answer
    // 503 SB_DRAINING (or /readyz 503) in the one error shape; fastify's own 503 has another.
    return503OnClosing: false,
  };
}

/** The answer to a request Node's HTTP parser gave up on, before any route saw it. */
function clientErrorAnswer(error: ConnectionError): HttpError {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return {
        status: 408,
        code: 'SB_HTTP_REQUEST_TIMEOUT',
        message: 'request: headers and body not received within server.request_timeout',
      };
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, code: 'SB_HTTP_BAD_REQUEST', message: 'headers: larger than the server accepts' };
    default:
      return { status: 400, code: 'SB_HTTP_BAD_REQUEST', message: 'malformed HTTP request' };
  }
}

/**
 * Answers a connection-level error (a request past `request_timeout`, a malformed request line)
 * in the one error shape and closes the connection, as Node would with a bare status line.
 */
function answerClientError(error: ConnectionError, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const answer = clientErrorAnswer(error);
  const body = JSON.stringify(errorBody(answer));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status]}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
  }
  socket.destroy();
}

/** The HTTP side of a shutdown (docs/design.md §2 "Shutdown"). */
export interface HttpServerShutdown {
  /**
   * Shutdown began: idle keep-alive connections are closed now, and every answer from now on
   * closes its connection, so clients reconnect (to another replica) instead of keeping this one.
   */
  drain(): void;
  /**
   * Stops listening and lets the answers in flight finish for up to `timeoutMs` (at least 1 s),
   * then cuts every connection still open — a slow body, a stream nobody reads — so that the
   * process exits within the container's stop grace. Resolves once the server is closed.
   */
  close(timeoutMs: number): Promise<void>;
  /**
   * Gives `app`, an app the server hands requests to (it never listens itself), the drain's
   * `Connection: close`; call before `app.ready()`.
   */
  closeConnectionsOf(app: FastifyInstance): void;
}

/** Adds the `Connection: close` hook of the drain to `server`; call before `server.ready()`. */
export function createHttpServerShutdown(server: FastifyInstance): HttpServerShutdown {
  let draining = false;
  closeConnectionsWhen(server, () => draining);

  return {
    drain() {
      draining = true;
      server.server.closeIdleConnections();
    },

    async close(timeoutMs) {
      draining = true;
      const cut = setTimeout(() => server.server.closeAllConnections(), Math.max(timeoutMs, CLOSE_GRACE_MS));
      try {
        await server.close();
      } finally {
        clearTimeout(cut);
      }
    },

    closeConnectionsOf(app) {
      closeConnectionsWhen(app, () => draining);
    },
  };
}

/**
 * Once `draining()`, every answer of `app` closes its connection. Without it, a connection busy
 * when `close()` starts stays open after its answer for the keep-alive timeout (72 s): Node closes
 * only the connections idle at that moment.
 */
function closeConnectionsWhen(app: FastifyInstance, draining: () => boolean): void {
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (draining()) reply.header('connection', 'close');
    done(null, payload);
  });
}
