import { SwitchboardError } from '@switchboard/core';
import type { FastifyInstance } from 'fastify';

/** The wait suggested to a client refused for too many requests in flight. */
const RETRY_AFTER_MS = 1000;

/**
 * Caps the requests in flight on the routes of `scope` (`max_concurrent_requests`): past the
 * cap a request gets 429 SB_HTTP_TOO_MANY_REQUESTS with `Retry-After: 1` instead of one more
 * waiting handler. A slot is freed when the response closes — after it is sent, or when the
 * client goes away mid-wait — so an abandoned long wait cannot leak it.
 *
 * A request takes its slot once its body is in and valid (`preHandler`): counted from the first
 * byte, 100 clients trickling bodies at 1 byte/s held every slot and locked the API out. The time
 * a client may take to send its request is bounded by `server.request_timeout` instead.
 */
export function limitConcurrentRequests(scope: FastifyInstance, maxInFlight: number): void {
  let inFlight = 0;
  const release = () => {
    inFlight -= 1;
  };
  scope.addHook('preHandler', (_request, reply, done) => {
    if (inFlight >= maxInFlight) {
      done(
        new SwitchboardError('SB_HTTP_TOO_MANY_REQUESTS', {
          message: `more than ${maxInFlight} requests in flight; retry later`,
          retryAfterMs: RETRY_AFTER_MS,
        }),
      );
      return;
    }
    // The client may have gone between its last byte and this hook: 'close' has fired already.
    if (reply.raw.closed) {
      done();
      return;
    }
    inFlight += 1;
    // `on`, not `once`: a response closes once, and `once` wraps the listener anew per request.
    reply.raw.on('close', release);
    done();
  });
}
