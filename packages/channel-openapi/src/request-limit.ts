import { SwitchboardError } from '@switchboard/core';
import type { FastifyInstance } from 'fastify';

/** The wait suggested to a client refused for too many requests in flight. */
const RETRY_AFTER_MS = 1000;

/**
 * Caps the requests in flight on the routes of `scope` (`max_concurrent_requests`): past the
 * cap a request gets 429 SB_HTTP_TOO_MANY_REQUESTS with `Retry-After: 1` instead of one more
 * waiting handler. A slot is freed when the response closes — after it is sent, or when the
 * client goes away mid-wait — so an abandoned long wait cannot leak it.
 */
export function limitConcurrentRequests(scope: FastifyInstance, maxInFlight: number): void {
  let inFlight = 0;
  const release = () => {
    inFlight -= 1;
  };
  scope.addHook('onRequest', (_request, reply, done) => {
    if (inFlight >= maxInFlight) {
      done(
        new SwitchboardError('SB_HTTP_TOO_MANY_REQUESTS', {
          message: `more than ${maxInFlight} requests in flight; retry later`,
          retryAfterMs: RETRY_AFTER_MS,
        }),
      );
      return;
    }
    inFlight += 1;
    // `on`, not `once`: a response closes once, and `once` wraps the listener anew per request.
    reply.raw.on('close', release);
    done();
  });
}
