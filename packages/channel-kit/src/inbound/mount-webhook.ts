import type { IncomingHttpHeaders } from 'node:http';
import { type ErrorCode, type Logger, isSwitchboardError } from '@switchboard/core';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Disposition } from './disposition.js';
import { createRefusalLog } from './refusal-log.js';

/** What `verify` sees of a call: its headers and the body as received, decoded as UTF-8. */
export interface SignedCall {
  headers: IncomingHttpHeaders;
  /** The body as received: signatures cover bytes, not the parsed JSON. `''` when there is none. */
  rawBody: string;
}

/** Takes one parsed delivery to the ingress and says what the platform is told. */
export type WebhookHandler<Body> = (body: Body, headers: IncomingHttpHeaders) => Promise<Disposition>;

/** Options of `mountWebhook`. */
export interface WebhookOptions<Body> {
  /** The route, e.g. `webhookPath('telegram', id)`; mounted as `POST`. */
  path: string;
  /** Who is served, for the 503 before start: `telegram channel "tg"`. */
  name: string;
  /** Receives the refusal warnings and the acknowledged malformed bodies. */
  logger: Logger;
  /**
   * Content types accepted, each read as a raw string; others get 415.
   * Default: `['application/json']`.
   */
  contentTypes?: readonly string[];
  /**
   * Checks the headers before the body is read (a shared secret in a header). Returns why the call
   * is refused, naming the header, or `null` to let it in.
   */
  authorize?: (headers: IncomingHttpHeaders) => string | null;
  /**
   * Checks a signature over the raw body before anything parses it. Returns why the call is
   * refused, naming the header, or `null` to let it in; asynchronously when the check fetches
   * keys (a JWT verified against published keys).
   */
  verify?: (call: SignedCall) => string | null | Promise<string | null>;
  /** Reads a verified body; throws SB_HTTP_BAD_REQUEST naming the problem when it is malformed. */
  parse: (rawBody: string, headers: IncomingHttpHeaders) => Body;
  /**
   * What a malformed body gets: `reject` answers 400 naming the problem; `acknowledge` answers 200
   * and logs a warning, for platforms that redeliver anything else forever. Default: `reject`.
   */
  malformed?: 'reject' | 'acknowledge';
  /** The handler while the channel runs, `null` before start and after stop (503). */
  handler: () => WebhookHandler<Body> | null;
  /** The shortest gap between two refusal warnings of this route. Default: 1 minute. */
  refusalLogIntervalMs?: number;
  /** Clock of the refusal log, ms since the epoch. Default: `Date.now`. */
  now?: () => number;
}

/** A platform retries a call that did not answer 2xx; Retry-After tells it (and proxies) when. */
const NOT_RUNNING_RETRY_AFTER_MS = 1_000;

/** An error answer in the gateway's one shape, `{ error: { code, message, details? } }`. */
function answerError(
  reply: FastifyReply,
  status: number,
  code: ErrorCode,
  message: string,
  details?: Record<string, unknown>,
): FastifyReply {
  return reply
    .code(status)
    .send({ error: details === undefined ? { code, message } : { code, message, details } });
}

function unavailable(reply: FastifyReply, code: ErrorCode, message: string, retryAfterMs: number) {
  reply.header('retry-after', String(Math.max(1, Math.ceil(retryAfterMs / 1000))));
  return answerError(reply, 503, code, message);
}

/**
 * Mounts a platform's webhook route on the gateway's server, in its own plugin scope whose
 * content-type parsers keep the body as a raw string (signatures cover the bytes; a body that is
 * not valid UTF-8 fails its check); the body limit is the server's own. In order:
 *
 * 1. `authorize(headers)` in `onRequest`, before the body is read: 401 SB_HTTP_UNAUTHORIZED.
 * 2. `verify({ headers, rawBody })` before anything parses the body: 401 SB_HTTP_UNAUTHORIZED.
 *    Refusals are logged at most once per interval (`webhook call refused`), so a flood of forged
 *    calls does not flood the log.
 * 3. Not running (`handler()` is `null`): 503 SB_DRAINING with `Retry-After`.
 * 4. `parse(rawBody)`: a malformed body gets 400 or 200, as `malformed` says — never a 5xx.
 * 5. The handler's disposition: 200 (with its `body`, if any), or 503 with its code and
 *    `Retry-After` so that the platform delivers it again.
 *
 * Anything else the handler throws goes to the server's error handler. The answer waits for the
 * handler, so a 200 means the ingress has journaled the delivery (or it was final).
 */
export function mountWebhook<Body>(server: FastifyInstance, options: WebhookOptions<Body>): void {
  const { path, name, logger, authorize, verify, parse } = options;
  const contentTypes = [...(options.contentTypes ?? ['application/json'])];
  const malformed = options.malformed ?? 'reject';
  const noteRefusal = createRefusalLog({
    logger: logger.child({ route: path }),
    intervalMs: options.refusalLogIntervalMs,
    now: options.now,
  });

  function refuse(reply: FastifyReply, problem: string): FastifyReply {
    noteRefusal({ problem });
    return answerError(reply, 401, 'SB_HTTP_UNAUTHORIZED', problem);
  }

  void server.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(contentTypes, { parseAs: 'string' }, (_request, body, done) =>
      done(null, body),
    );
    scope.post(
      path,
      {
        onRequest: async (request, reply) => {
          const problem = authorize?.(request.headers) ?? null;
          if (problem !== null) return refuse(reply, problem);
        },
      },
      async (request, reply) => {
        const rawBody = typeof request.body === 'string' ? request.body : '';
        const problem = (await verify?.({ headers: request.headers, rawBody })) ?? null;
        if (problem !== null) return refuse(reply, problem);

        const handle = options.handler();
        if (handle === null) {
          return unavailable(reply, 'SB_DRAINING', `${name} is not running`, NOT_RUNNING_RETRY_AFTER_MS);
        }
        let body: Body;
        try {
          body = parse(rawBody, request.headers);
        } catch (err) {
          if (!isSwitchboardError(err, 'SB_HTTP_BAD_REQUEST')) throw err;
          if (malformed === 'reject') return answerError(reply, 400, err.code, err.message, err.details);
          logger.warn({ problem: err.message }, 'malformed webhook body acknowledged');
          return reply.code(200).send();
        }
        const disposition = await handle(body, request.headers);
        if (!disposition.acknowledge) {
          return unavailable(reply, disposition.code, disposition.message, disposition.retryAfterMs);
        }
        return reply.code(200).send(disposition.body);
      },
    );
  });
}
