import type { Redis } from 'ioredis';
import type { Logger } from '@switchboard/core';

/**
 * The pool's production clock: Redis' `TIME`, carried forward by this process's monotonic clock,
 * so that replicas on hosts whose clocks drift apart still agree on lease deadlines, debounce and
 * backoff due times (docs/design.md §5), and a step of this host's clock (NTP, an operator) moves
 * none of them. Anchored at connect and again every `remeasureEveryMs`; a failed measurement
 * keeps the last anchor.
 */
export interface RedisClock {
  now(): number;
  /** Stops the re-measuring. */
  stop(): void;
}

/** Redis' time at one moment of this process's monotonic clock (`performance.now()`). */
interface Anchor {
  redisMs: number;
  monotonicMs: number;
}

/** Reads Redis' `TIME`, taking the middle of the round trip as the moment Redis read it. */
async function measureAnchor(client: Redis): Promise<Anchor> {
  const sentAt = performance.now();
  const [seconds, microseconds] = await client.time();
  const receivedAt = performance.now();
  return {
    redisMs: Number(seconds) * 1000 + Number(microseconds) / 1000,
    monotonicMs: (sentAt + receivedAt) / 2,
  };
}

export async function startRedisClock(
  client: Redis,
  options: { remeasureEveryMs: number; logger: Logger },
): Promise<RedisClock> {
  let anchor = await measureAnchor(client);
  const timer = setInterval(() => {
    measureAnchor(client).then(
      (measured) => {
        anchor = measured;
      },
      (err: unknown) => options.logger.warn({ err }, 'redis clock not measured: keeping the last anchor'),
    );
  }, options.remeasureEveryMs);
  timer.unref();
  return {
    now: () => Math.round(anchor.redisMs + (performance.now() - anchor.monotonicMs)),
    stop: () => clearInterval(timer),
  };
}
