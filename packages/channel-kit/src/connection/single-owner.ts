import {
  type ChannelAdapter,
  type ChannelContext,
  type ChannelLease,
  type ChannelLeases,
  type LeaseTiming,
  type Logger,
  backoffDelayMs,
} from '@switchboard/core';

/** A standby tries again this soon after the holder's deadline, ms: one clock tick's margin. */
const AFTER_DEADLINE_MS = 10;

/**
 * How often a standby asks for the lease, ms: the wait for a lease released at a graceful stop
 * (one cheap script call per standby channel and second).
 */
const STANDBY_RETRY_MS = 1_000;

/**
 * After a start that failed with the lease in hand (a refused token, the platform down), this
 * replica waits before it asks for the lease again, doubling per failure: other replicas may
 * try meanwhile, and a broken token does not call the platform every second.
 */
const START_RETRY = { baseDelayMs: 1_000, maxDelayMs: 60_000 };

/** Where a single-owner channel runs, as `/readyz` and `/admin/queues` show it. */
export type ChannelRole = 'active' | 'standby';

/** A single-owner channel as this replica sees it. */
export interface OwnedChannel {
  readonly id: string;
  readonly type: string;
  /** `active` while this replica runs the connection, `standby` otherwise. */
  role(): ChannelRole;
}

/** The channel of `adapter`, started only while this replica holds its lease. */
interface LeasedChannel extends ChannelAdapter, OwnedChannel {}

/** How `ownChannels` puts channels behind their leases. */
export interface ChannelOwnershipOptions {
  /** The deployment's channel leases, shared by the replicas. */
  leases: ChannelLeases;
  /** This replica's id, the lease holder's name. */
  replicaId: string;
  logger: Logger;
  /**
   * The lease's length, renewal period and fencing delay: the deployment's, so that a dead
   * replica's connections move on with its turns (the gateway passes the pool's).
   */
  timing: LeaseTiming;
}

/**
 * The holder's clock for renewals, fencing and retries: monotonic, so that a step of the host's
 * clock neither fences a live connection nor keeps one past its lease. Deadlines themselves are
 * the store's (ports/channel-lease.ts).
 */
const now = () => performance.now();

/**
 * Wraps `adapter` so that its connection runs only on the replica holding the channel's lease
 * (docs/design.md §5 "Single-owner connections"): the lease is acquired at start or, on
 * standby, as soon as the holder's deadline passes; renewed every `renewEveryMs`; on losing it
 * (taken over, or no renewal for `fenceAfterMs`) the connection stops at once; `drain` stops
 * the connection and releases the lease so that another replica takes over at once. `send`
 * works on every replica: turns run wherever the pool hands them out.
 */
function leased(adapter: ChannelAdapter, options: ChannelOwnershipOptions): LeasedChannel {
  const { leases, replicaId } = options;
  const { leaseMs, renewEveryMs, fenceAfterMs } = options.timing;
  const logger = options.logger.child({ component: 'channel.lease', channel: adapter.id });
  let context: ChannelContext | null = null;
  let lease: ChannelLease | null = null;
  /** The other replica's lease, as the last acquire saw it. */
  let other: ChannelLease | null = null;
  let lastRenewedAt = 0;
  let running = false;
  /** Starts and stops of the connection, one after the other. */
  let transition: Promise<void> = Promise.resolve();
  let interval: NodeJS.Timeout | undefined;
  let deadlineTimer: NodeJS.Timeout | undefined;
  /** Fires `fenceAfterMs` after the last renewal: fencing must not wait for the next tick. */
  let fenceTimer: NodeJS.Timeout | undefined;
  /** Set while acquisitions fail (Redis away): logged once, retried at the standby pace. */
  let acquireFailing = false;
  /** The tick under way, if any. */
  let ticking: Promise<void> | undefined;
  let handingOver: Promise<void> | undefined;
  /**
   * Why the last start after acquiring the lease failed, until one succeeds: a standby stays
   * ready (it must keep its webhooks and HTTP channel), but says so.
   */
  let lastStartFailure: string | undefined;
  let startFailures = 0;
  /** No acquisition before this (ms, `now`): the wait after a failed start. */
  let retryStartAt = 0;

  /** Stops the connection now; the lease is gone already (no longer ours or no longer known). */
  function fence(level: 'warn' | 'error', message: string, fields: object = {}): void {
    const lost = lease;
    lease = null;
    clearTimeout(fenceTimer);
    if (!running) return;
    running = false;
    logger[level]({ ...fields, epoch: lost?.epoch }, message);
    transition = transition
      .then(() => adapter.stop())
      .catch((err: unknown) => logger.error({ err }, 'channel stop failed after losing its lease'));
  }

  function fenceIfOverdue(): void {
    const silentMs = now() - lastRenewedAt;
    if (lease !== null && silentMs >= fenceAfterMs) {
      fence('error', 'channel lease lost: no renewal for too long, connection stopped', { silentMs });
    }
  }

  /** (Re)arms the fencing timer for the lease held since `lastRenewedAt`. */
  function armFence(): void {
    clearTimeout(fenceTimer);
    if (lease === null) return;
    fenceTimer = setTimeout(fenceIfOverdue, Math.max(0, lastRenewedAt + fenceAfterMs - now()));
    fenceTimer.unref();
  }

  async function renew(held: ChannelLease): Promise<void> {
    const startedAt = now();
    try {
      const renewed = await leases.renew(held, leaseMs);
      if (lease !== held) return; // fenced while the call was on its way
      if (renewed === null) {
        fence('warn', 'channel lease lost: taken over or expired, connection stopped');
        return;
      }
      lease = renewed;
      lastRenewedAt = startedAt;
      armFence();
    } catch (err) {
      fenceIfOverdue();
      if (lease === held)
        logger.warn({ err, silentMs: now() - lastRenewedAt }, 'channel lease renewal failed: retrying');
    }
  }

  /** A start after the lease was acquired failed: the lease goes back at once. */
  async function startFailed(acquired: ChannelLease, err: unknown): Promise<void> {
    running = false;
    lastStartFailure = err instanceof Error ? err.message : String(err);
    startFailures += 1;
    retryStartAt = now() + backoffDelayMs(startFailures, START_RETRY);
    logger.error(
      { err, epoch: acquired.epoch },
      'channel failed to start after acquiring its lease: lease released',
    );
    if (lease !== acquired) return;
    lease = null;
    await leases.release(acquired).catch(() => {});
  }

  /**
   * Takes the lease if it is free and starts the connection, without waiting for that start
   * (renewals go on meanwhile): returns the start — in an object, which an async function
   * does not wait for as it would for a promise — or null on standby.
   */
  async function acquire(): Promise<{ starting: Promise<void> } | null> {
    const startedAt = now();
    const answer = await leases.acquire(adapter.id, replicaId, leaseMs);
    if (answer.holder !== replicaId) {
      if (other?.holder !== answer.holder)
        logger.info({ holder: answer.holder, epoch: answer.epoch }, 'channel on standby');
      other = answer;
      return null;
    }
    other = null;
    lease = answer;
    lastRenewedAt = startedAt;
    armFence();
    running = true;
    logger.info(
      { epoch: answer.epoch, replica: replicaId },
      'channel lease acquired: starting the connection',
    );
    const starting = transition.then(async () => {
      await adapter.start(context as ChannelContext);
      lastStartFailure = undefined;
      startFailures = 0;
    });
    transition = starting.catch((err: unknown) => startFailed(answer, err));
    return { starting };
  }

  async function tick(): Promise<void> {
    fenceIfOverdue();
    if (lease !== null) await renew(lease);
    else if (now() >= retryStartAt) {
      await transition;
      try {
        await acquire();
        if (acquireFailing) logger.info({}, 'channel lease store answers again');
        acquireFailing = false;
      } catch (err) {
        // The holder's deadline is no longer known: ask again at the standby pace, not at once.
        other = null;
        if (!acquireFailing) logger.warn({ err }, 'channel lease not acquired: retrying every second');
        acquireFailing = true;
      }
    }
  }

  /** One tick at a time; none once the hand-over began. */
  function runTick(): void {
    if (ticking !== undefined || handingOver !== undefined) return;
    ticking = tick().finally(() => {
      ticking = undefined;
      armDeadlineTimer();
    });
  }

  /**
   * A standby tries again every `STANDBY_RETRY_MS`, and right after the holder's deadline when
   * that comes sooner: a lease released at a graceful stop is taken within that wait.
   */
  function armDeadlineTimer(): void {
    clearTimeout(deadlineTimer);
    if (lease !== null || handingOver !== undefined) return;
    // The holder's deadline is on the store's clock: read on this host's, it is an estimate,
    // which only times the next try (bounded below and above). A lease the store called live
    // whose deadline reads past here says that this clock is ahead of the store's, not when it
    // ends: the standby pace then, or every try would come AFTER_DEADLINE_MS after the last.
    const untilDeadlineMs = other === null ? STANDBY_RETRY_MS : other.expiresAt - Date.now();
    deadlineTimer = setTimeout(
      runTick,
      untilDeadlineMs <= 0
        ? STANDBY_RETRY_MS
        : Math.max(AFTER_DEADLINE_MS, Math.min(STANDBY_RETRY_MS, untilDeadlineMs + AFTER_DEADLINE_MS)),
    );
    deadlineTimer.unref();
  }

  /**
   * Every `renewEveryMs`: fencing first, whether or not a tick is still on its way (a renewal
   * waiting for its command timeout must not hold it back), then a renewal or an acquisition.
   */
  function schedule(): void {
    interval = setInterval(() => {
      fenceIfOverdue();
      runTick();
    }, renewEveryMs);
    interval.unref();
    armDeadlineTimer();
  }

  /** Stops the connection, then releases the lease: the next holder never overlaps with this one. */
  async function handOver(): Promise<void> {
    clearInterval(interval);
    clearTimeout(deadlineTimer);
    clearTimeout(fenceTimer);
    await ticking;
    const held = lease;
    lease = null;
    if (running) {
      running = false;
      transition = transition
        .then(() => adapter.stop())
        .catch((err: unknown) => logger.error({ err }, 'channel stop failed at the hand-over'));
    }
    await transition;
    if (held === null) return;
    const released = await leases.release(held).catch((err: unknown) => {
      logger.warn({ err }, 'channel lease not released: it expires at its deadline');
      return false;
    });
    if (released) logger.info({ epoch: held.epoch }, 'channel lease released');
  }

  return {
    id: adapter.id,
    type: adapter.type,
    singleConsumer: true,
    role: () => (running ? 'active' : 'standby'),

    async start(started) {
      context = started;
      const acquired = await acquire();
      // Renewals run while the connection starts: a slow start (a Discord login) must not let
      // the lease lapse, nor fence itself.
      schedule();
      try {
        await acquired?.starting;
      } catch (err) {
        // A start that fails at once fails the gateway's start, as for any channel.
        clearInterval(interval);
        clearTimeout(deadlineTimer);
        clearTimeout(fenceTimer);
        await transition;
        throw err;
      }
    },

    drain() {
      adapter.drain?.();
      handingOver ??= handOver();
    },

    async stop() {
      handingOver ??= handOver();
      await handingOver;
    },

    send: (origin, replies, signal, sendOptions) => adapter.send(origin, replies, signal, sendOptions),
    ...(adapter.preview === undefined ? {} : { preview: adapter.preview.bind(adapter) }),
    // Like `send`, typing works on every replica, whether or not it holds the connection.
    ...(adapter.typing === undefined || adapter.typingIntervalMs === undefined
      ? {}
      : { typing: adapter.typing.bind(adapter), typingIntervalMs: adapter.typingIntervalMs }),
    // Like sends, files open on any replica: the media link may reach one that does not poll.
    ...(adapter.openMedia === undefined ? {} : { openMedia: adapter.openMedia.bind(adapter) }),

    health() {
      if (running) return adapter.health();
      if (handingOver !== undefined) return { ready: false, detail: 'stopped' };
      return {
        ready: true,
        detail: [
          other === null ? 'standby' : `standby: replica ${other.holder} holds the lease`,
          ...(lastStartFailure === undefined ? [] : [`the last start here failed: ${lastStartFailure}`]),
        ].join('; '),
      };
    },
  };
}

/** The channels of this replica, the single-owner ones behind their leases. */
export interface OwnedChannels {
  /** Channel id → the adapter to use: the single-owner ones behind their leases. */
  adapters: ReadonlyMap<string, ChannelAdapter>;
  /** The single-owner channels by id. */
  owned: ReadonlyMap<string, OwnedChannel>;
  /**
   * Every single-owner channel with the lease in force on it (null while none is), for
   * `/admin/queues`.
   */
  holders(): Promise<Array<{ id: string; type: string; role: ChannelRole; lease: ChannelLease | null }>>;
  /**
   * Puts `adapter` in the place of its id (a channel added or changed by a reload) and returns
   * the adapter to use for it. Whoever had the place must have stopped: the lease is its id's.
   */
  add(adapter: ChannelAdapter): ChannelAdapter;
  /** Takes channel `id` out (removed by a reload; stopped by the caller). */
  remove(id: string): void;
}

/** Puts each single-consumer adapter (`singleConsumer`) behind its channel lease. */
export function ownChannels(
  adapters: ReadonlyMap<string, ChannelAdapter>,
  options: ChannelOwnershipOptions,
): OwnedChannels {
  const wrapped = new Map<string, ChannelAdapter>();
  const owned = new Map<string, OwnedChannel>();
  function add(adapter: ChannelAdapter): ChannelAdapter {
    owned.delete(adapter.id);
    if (adapter.singleConsumer !== true) {
      wrapped.set(adapter.id, adapter);
      return adapter;
    }
    const channel = leased(adapter, options);
    wrapped.set(adapter.id, channel);
    owned.set(adapter.id, channel);
    return channel;
  }
  for (const adapter of adapters.values()) add(adapter);
  return {
    adapters: wrapped,
    owned,
    async holders() {
      const held = new Map((await options.leases.holders()).map((lease) => [lease.channel, lease]));
      return [...owned.values()].map((channel) => ({
        id: channel.id,
        type: channel.type,
        role: channel.role(),
        lease: held.get(channel.id) ?? null,
      }));
    },
    add,
    remove(id) {
      wrapped.delete(id);
      owned.delete(id);
    },
  };
}
