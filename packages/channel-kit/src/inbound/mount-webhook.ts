import type { IncomingHttpHeaders } from 'node:http';
import { type ErrorCode, type Logger, isSwitchboardError } from '@switchboard/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Authorization } from './authorization.js';
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

/**
 * Checks the headers before the body is read (a shared secret in a header, a bearer token).
 * Resolves `{ refused }` naming the header, or `{ grant }` to let the call in, handing `verify`
 * what the check learned (a token's claims); asynchronously when the check fetches keys. A
 * retryable SwitchboardError thrown (the keys cannot be fetched) answers 503 with its code and
 * `Retry-After`.
 */
export type Authorizer<Grant> = (
  headers: IncomingHttpHeaders,
) => Authorization<Grant> | Promise<Authorization<Grant>>;

/**
 * Checks a signature over the raw body before anything parses it, with `grant` the one
 * `authorize` let this call in with (`undefined` without `authorize`). Returns why the call is
 * refused, naming the header, or `null` to let it in; asynchronously when the check fetches keys
 * (a JWT verified against published keys). A retryable SwitchboardError thrown (the keys cannot be
 * fetched) answers 503 with its code and `Retry-After`.
 */
export type Verifier<Grant> = (call: SignedCall, grant: Grant) => string | null | Promise<string | null>;

/** The options of `mountWebhook` but `authorize`. */
interface RouteOptions<Body, Grant> {
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
  /** Checks the body as received, before it is parsed (see `Verifier`). */
  verify?: Verifier<Grant>;
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

/**
 * Options of `mountWebhook`. `Grant` is what `authorize` hands `verify` of the same call;
 * `authorize` is required when there is one, so that `verify` never sees a grant missing.
 */
export type WebhookOptions<Body, Grant = undefined> = RouteOptions<Body, Grant> &
  ([Grant] extends [undefined] ? { authorize?: Authorizer<Grant> } : { authorize: Authorizer<Grant> });

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
 * 1. `authorize(headers)` in `onRequest`, before the body is read, so that a caller without the
 *    secret or a valid token cannot make the gateway read a body up to the limit: 401
 *    SB_HTTP_UNAUTHORIZED. Its grant is kept for this request only.
 * 2. `verify({ headers, rawBody }, grant)` before anything parses the body: 401
 *    SB_HTTP_UNAUTHORIZED.
 *    A retryable SwitchboardError either check throws (keys unreachable) is a 503 with its code
 *    and `Retry-After`.
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
export function mountWebhook<Body, Grant = undefined>(
  server: FastifyInstance,
  options: WebhookOptions<Body, Grant>,
): void {
  const { path, name, logger, verify, parse } = options;
  // Either branch of the options' conditional type has it; only its optionality differs.
  const { authorize } = options as { authorize?: Authorizer<Grant> };
  // What `authorize` let each call in with, until its body is checked: per request, gone with it.
  const grants = new WeakMap<FastifyRequest, Grant>();
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

  /**
   * A check that cannot be made now (keys unreachable): the platform delivers again after the
   * 503, and a flood of calls meanwhile is one warning per interval, not an error line each.
   * Anything else is rethrown to the server's error handler.
   */
  function cannotCheckNow(reply: FastifyReply, err: unknown): FastifyReply {
    if (!isSwitchboardError(err) || err.retryable !== true) throw err;
    noteRefusal({ problem: err.message });
    return unavailable(reply, err.code, err.message, err.retryAfterMs ?? NOT_RUNNING_RETRY_AFTER_MS);
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
          if (authorize === undefined) return;
          let authorization: Authorization<Grant>;
          try {
            authorization = await authorize(request.headers);
          } catch (err) {
            return cannotCheckNow(reply, err);
          }
          if ('refused' in authorization) return refuse(reply, authorization.refused);
          grants.set(request, authorization.grant);
        },
      },
      async (request, reply) => {
        const rawBody = typeof request.body === 'string' ? request.body : '';
        // Set by `onRequest` whenever there is an `authorize`; the options' type holds `Grant`
        // to `undefined` when there is none.
        const grant = grants.get(request) as Grant;
        grants.delete(request);
        let problem: string | null;
        try {
          problem = (await verify?.({ headers: request.headers, rawBody }, grant)) ?? null;
        } catch (err) {
          return cannotCheckNow(reply, err);
        }
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
