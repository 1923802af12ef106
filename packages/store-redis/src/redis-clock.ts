import { type RedisClient, primaryOf } from './redis-connection.js';
import type { Logger } from '@switchboard/core';

/**
 * The pool's production clock: this host's monotonic clock corrected by its offset from Redis'
 * `TIME`, so that replicas on hosts whose clocks drift apart still agree on lease deadlines,
 * debounce and backoff due times (docs/design.md §5). The offset is measured at connect, again
 * every `remeasureEveryMs` and whenever the connection comes back; a failed measurement keeps the
 * last offset. Monotonic, so that a step
 * of the host's wall clock does not move it until the next measurement: 30 s ahead, it would
 * take every other replica's leases for expired meanwhile. Once the two clocks part by more than
 * a second (a step, or a sleep that stopped the monotonic one), the offset is measured at once.
 */
export interface RedisClock {
  now(): number;
  /** Stops the re-measuring. */
  stop(): void;
}

/** How far the wall and monotonic clocks may part before the offset is measured again, ms. */
const GAP_MOVED_MS = 1_000;

/** This host's monotonic clock, ms, counted from the wall clock's reading at the process's start. */
const hostNow = () => performance.timeOrigin + performance.now();

/** Reads of `TIME` per measurement: the one with the shortest round trip is kept. */
const SAMPLES = 3;

/**
 * Redis' time minus `hostNow`, ms, taking the middle of the round trip as the moment Redis read
 * it. Of a few reads, the one with the shortest round trip: a `TIME` queued behind a blocking
 * command on the connection (a `WAIT`) has a long one, and its middle is far from the read.
 */
async function measureOffsetMs(client: RedisClient, prefix: string): Promise<number> {
  let best = { roundTripMs: Number.POSITIVE_INFINITY, offsetMs: 0 };
  for (let sample = 0; sample < SAMPLES; sample++) {
    const sentAt = hostNow();
    const [seconds, microseconds] = await primaryOf(client, prefix).time();
    const receivedAt = hostNow();
    const redisMs = Number(seconds) * 1000 + Math.floor(Number(microseconds) / 1000);
    if (receivedAt - sentAt < best.roundTripMs)
      best = { roundTripMs: receivedAt - sentAt, offsetMs: redisMs - (sentAt + receivedAt) / 2 };
  }
  return best.offsetMs;
}

export async function startRedisClock(
  client: RedisClient,
  options: {
    remeasureEveryMs: number;
    logger: Logger /** The deployment's: its slot's primary is read (a cluster). */;
    prefix: string;
  },
): Promise<RedisClock> {
  /** The wall clock minus the monotonic one: it moves when either steps, or the host slept. */
  const wallGap = () => Date.now() - hostNow();
  let offsetMs = await measureOffsetMs(client, options.prefix);
  let gapAtMeasurement = wallGap();
  let measuring = false;
  function remeasure(): void {
    if (measuring) return;
    measuring = true;
    const gap = wallGap();
    measureOffsetMs(client, options.prefix)
      .then(
        (measured) => {
          offsetMs = measured;
          gapAtMeasurement = gap;
        },
        (err: unknown) =>
          options.logger.warn({ err }, 'redis clock offset not measured: keeping the last one'),
      )
      .finally(() => {
        measuring = false;
      });
  }
  const timer = setInterval(remeasure, options.remeasureEveryMs);
  timer.unref();
  // A connection that returns may reach another server (a failover), whose clock is another.
  client.on('ready', remeasure);
  return {
    now() {
      // A suspended host's monotonic clock stood still: measured again at once, not a minute on.
      if (Math.abs(wallGap() - gapAtMeasurement) > GAP_MOVED_MS) remeasure();
      return Math.round(hostNow() + offsetMs);
    },
    stop() {
      clearInterval(timer);
      client.off('ready', remeasure);
    },
  };
}
