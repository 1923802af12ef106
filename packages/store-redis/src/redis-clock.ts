import type { Redis } from 'ioredis';
import type { Logger } from '@switchboard/core';

/**
 * The pool's production clock: this host's monotonic clock corrected by its offset from Redis'
 * `TIME`, so that replicas on hosts whose clocks drift apart still agree on lease deadlines,
 * debounce and backoff due times (docs/design.md §5). The offset is measured at connect and again
 * every `remeasureEveryMs`; a failed measurement keeps the last offset. Monotonic, so that a step
 * of the host's wall clock does not move it until the next measurement: 30 s ahead, it would
 * take every other replica's leases for expired meanwhile.
 */
export interface RedisClock {
  now(): number;
  /** Stops the re-measuring. */
  stop(): void;
}

/** This host's monotonic clock, ms, counted from the wall clock's reading at the process's start. */
const hostNow = () => performance.timeOrigin + performance.now();

/** Redis' time minus `hostNow`, ms, taking the middle of the round trip as the moment Redis read it. */
async function measureOffsetMs(client: Redis): Promise<number> {
  const sentAt = hostNow();
  const [seconds, microseconds] = await client.time();
  const receivedAt = hostNow();
  const redisMs = Number(seconds) * 1000 + Math.floor(Number(microseconds) / 1000);
  return redisMs - (sentAt + receivedAt) / 2;
}

export async function startRedisClock(
  client: Redis,
  options: { remeasureEveryMs: number; logger: Logger },
): Promise<RedisClock> {
  let offsetMs = await measureOffsetMs(client);
  const timer = setInterval(() => {
    measureOffsetMs(client).then(
      (measured) => {
        offsetMs = measured;
      },
      (err: unknown) => options.logger.warn({ err }, 'redis clock offset not measured: keeping the last one'),
    );
  }, options.remeasureEveryMs);
  timer.unref();
  return {
    now: () => Math.round(hostNow() + offsetMs),
    stop: () => clearInterval(timer),
  };
}
