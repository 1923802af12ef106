import { type Logger, silentLogger } from '@switchboard/core';
import { type RedisClient, type RedisTarget, connect, createRedisClient } from './redis-connection.js';
import type { ReplicationOptions } from './replication-wait.js';
import { openScriptClient } from './script-client.js';

/**
 * Permits of a concurrency limit this replica shares with pools it does not see (the other
 * partitions): a claim needs one free (`RedisQueryPoolOptions.permits`). A turn the claim got
 * keeps its permit while its lease is held; the pools count those turns.
 */
export interface ClaimPermits {
  /** Takes a free permit for a claim about to be sent; false when this replica has none free. */
  take(): boolean;
  /**
   * Takes one for a claim in the step of another write: an enqueue's (`ending` 0) or a
   * settlement's (`ending` 1: the turn it ends, whose permit the claim may use). May refuse
   * though one is free, to leave the claim to another partition's turn.
   */
  takeInStep(ending: 0 | 1): boolean;
  /** Ends a take once its claim was answered (a turn it got counts as running from then on). */
  put(ending?: 0 | 1): void;
  /**
   * The turn whose permit a settlement's claim in its step uses was given up while the claim was
   * under way: the claim holds that permit on its own now (its `put` then says `ending` 0).
   */
  endingGone(): void;
}

export interface GlobalPermitsOptions {
  /** Redis URL or cluster seeds; the permits open and own their connections. Either this or `client`. */
  url?: RedisTarget;
  /** A connection the caller owns for the scripts; the announcements need `url`. */
  client?: RedisClient;
  /** Replicas that must hold a hold before it is answered (`WAIT`): a failover then loses none. */
  replication?: ReplicationOptions | undefined;
  /** The deployment's prefix: keys are `{<prefix>}:permits:…`, in the deployment's slot (partition 0's). */
  prefix: string;
  replicaId: string;
  /** The global concurrency limit. */
  limit: number;
  /** Turns this replica runs now (in every partition). */
  running(): number;
  /** A hold lasts this long without a call (ms): the pool's lease length. */
  holdMs: number;
  /** How often the hold is renewed (ms). */
  renewEveryMs: number;
  /** Without a renewal for this long the permits may be gone: the turns are given up (ms). */
  fenceAfterMs: number;
  /** Called when this replica may run no more turns than it does: give them all up. */
  onLapsed(): void;
  logger?: Logger;
}

export interface GlobalPermits extends ClaimPermits {
  /** A refused take is counted: a claim refused for want of a permit says nothing of its partition. */
  readonly refusals: number;
  /** The permits nobody held at this replica's last call (a hint: others may have taken them since). */
  readonly fleetFree: number;
  /** Permits held now. */
  readonly held: number;
  /** No renewal succeeded for `fenceAfterMs`: no turn may run here (one a claim lands is handed back). */
  readonly fenced: boolean;
  /** True when a `take` would succeed now. */
  available(): boolean;
  /** Permits free now, counting those of `ending` turns as free. */
  free(ending?: 0 | 1): number;
  /** Makes one permit free for a claim, asking the limit for it when none is: false when it is full. */
  acquire(): Promise<boolean>;
  /** Gives back the permits held and not in use, so that any replica may claim with them. */
  release(): Promise<void>;
  /** Calls `listener` when a replica gave permits back while one was short. */
  onFreed(listener: () => void): () => void;
  /** A reload changed the global limit. */
  setLimit(limit: number): void;
  /** Stops renewing and gives every permit back (the replica leaves). */
  close(): Promise<void>;
}

/** `{held, lapsed, free}` (lua/global-permits/hold.lua). */
type HoldReply = [number, number, number];

/** The keys of the shared limit, in the script's KEYS order, and its announcement channel; one slot. */
export function permitKeysOf(prefix: string): { keys: string[]; freedChannel: string } {
  const base = `{${prefix}}:permits`;
  return { keys: [`${base}:held`, `${base}:deadlines`, `${base}:short`], freedChannel: `${base}:freed` };
}

/**
 * The global limit of a partitioned pool (docs/design.md §5 "Partitions"), held as permits in one
 * slot: a replica holds one per turn it runs or claims. A claim finding no free permit asks for
 * one; permits not in use go back when a turn ends without a next one and when a claim finds
 * nothing, so a slot freed by one replica is every replica's at once; a replica that was short is
 * told when permits come back. The hold is renewed with the leases; a replica whose hold lapsed,
 * or that could not renew it for `fenceAfterMs`, gives up its turns, so the turns running in the
 * fleet never exceed the limit.
 */
export async function createGlobalPermits(options: GlobalPermitsOptions): Promise<GlobalPermits> {
  const logger = options.logger ?? silentLogger;
  const { keys, freedChannel } = permitKeysOf(options.prefix);
  const opened = await openScriptClient({
    url: options.url,
    client: options.client,
    prefix: options.prefix,
    retryAfterMs: options.renewEveryMs,
    replication: options.replication,
  });
  const subscriber = options.url === undefined ? undefined : createRedisClient(options.url);
  const freedListeners = new Set<() => void>();
  let limit = options.limit;
  /** What Redis answered this replica holds, as far as it may be used (see `usable`). */
  let held = 0;
  /** What the call under way asks to hold: a claim may not count on more until it is answered. */
  let asking: number | undefined;
  /** Set when no renewal succeeded for `fenceAfterMs`: the hold may be gone, nothing is usable. */
  let fenced = false;
  let reserved = 0;
  /** Takes of settlements claiming in their step, each using the permit of the turn it ends. */
  let ending = 0;
  /** Claims waiting for a permit the limit may grant. */
  let wanting = 0;
  let refusals = 0;
  /** The permits nobody held at the last call: a hint, not a promise. */
  let fleetFree = 0;
  let lastHeldAt = performance.now();
  let closed = false;
  /** The call under way, and the one asked for meanwhile (it runs after, with the numbers of then). */
  let calling: Promise<void> | undefined;
  let next: Promise<void> | undefined;

  /** Permits in use: turns running, claims under way, less those using an ending turn's permit. */
  const inUse = () => reserved + options.running() - ending;
  /**
   * What a claim may count on: none when fenced; no more than the call under way asks (it may
   * give the rest back) nor than the limit (a reload may have lowered it).
   */
  const usable = () => (fenced ? 0 : Math.min(held, asking ?? held, limit));

  async function hold(leave: boolean): Promise<void> {
    const used = inUse();
    // Past a lowered limit a replica keeps what it uses and asks for nothing more.
    const asked = leave ? 0 : Math.max(used, Math.min(used + wanting, limit));
    asking = asked;
    try {
      const [nowHeld, lapsed, freeInFleet] = await opened.script<HoldReply>('global-permits/hold', keys, [
        options.replicaId,
        used,
        asked,
        options.holdMs,
        limit,
        leave ? '1' : '0',
        freedChannel,
      ]);
      held = nowHeld;
      fleetFree = freeInFleet;
      fenced = false;
      lastHeldAt = performance.now();
      if (lapsed === 1) {
        logger.error({ held, inUse: used }, "global permits lapsed: giving up this replica's turns");
        options.onLapsed();
      }
    } catch (err) {
      // It may have been applied: a give-back then holds, a take may not.
      held = Math.min(held, asked);
      throw err;
    } finally {
      asking = undefined;
    }
  }

  function renewOnce(): Promise<void> {
    return hold(false).catch((err: unknown) => {
      logger.warn({ err }, 'global permits: renewal failed');
      if (performance.now() - lastHeldAt >= options.fenceAfterMs) {
        // The hold lapses soon after and others take its permits: use none until a call succeeds.
        fenced = true;
        held = 0;
        giveUpIfFenced();
      }
    });
  }

  /** One call at a time; a request meanwhile is served by one call after it, with the numbers of then. */
  function request(): Promise<void> {
    if (calling === undefined) {
      calling = renewOnce().finally(() => {
        calling = undefined;
      });
      return calling;
    }
    next ??= calling.then(() => {
      next = undefined;
      return request();
    });
    return next;
  }

  if (subscriber !== undefined) {
    subscriber.on('error', () => {});
    const tell = () => {
      for (const listener of freedListeners) listener();
    };
    subscriber.on('message', (_channel: string, announcement: string) => {
      if (announcement === 'wanted') giveBackUnused();
      else tell();
    });
    // Announcements made while it was away are lost: the listeners look again.
    subscriber.on('ready', tell);
    try {
      await connect(subscriber, options.renewEveryMs);
      await subscriber.subscribe(freedChannel);
    } catch (err) {
      subscriber.disconnect();
      if (opened.ownsClient) opened.client.disconnect();
      throw err;
    }
  }
  const timer = setInterval(() => void request(), options.renewEveryMs);
  timer.unref();
  try {
    await hold(false);
  } catch (err) {
    clearInterval(timer);
    subscriber?.disconnect();
    if (opened.ownsClient) opened.client.disconnect();
    throw err;
  }

  const available = () => inUse() < usable();
  /** Fenced, the replica may run no turn: those it runs are given up (at each failed renewal). */
  function giveUpIfFenced(): void {
    if (!fenced || options.running() === 0) return;
    logger.error({}, "global permits: not renewed for too long, giving up this replica's turns");
    options.onLapsed();
  }
  function giveBackUnused(): void {
    void release();
  }
  /** Gives back the permits held and not in use (another replica is short, or this one is idle). */
  async function release(): Promise<void> {
    if (usable() > inUse() && !closed) await request();
  }
  const reserve = (isAvailable: boolean): boolean => {
    if (!isAvailable) {
      refusals += 1;
      return false;
    }
    reserved += 1;
    return true;
  };

  return {
    get held() {
      return usable();
    },
    get refusals() {
      return refusals;
    },
    get fenced() {
      return fenced;
    },
    get fleetFree() {
      return fleetFree;
    },
    available,
    free: (endingTurns = 0) => usable() - (inUse() - endingTurns),
    take: () => reserve(available()),
    takeInStep(endingTurns) {
      // The ending turn's permit counts as free for this claim; it is the claim's once taken.
      if (!reserve(inUse() - endingTurns < usable())) return false;
      ending += endingTurns;
      return true;
    },
    put(endingTurns = 0) {
      reserved -= 1;
      ending -= endingTurns;
    },
    endingGone() {
      ending -= 1;
    },
    async acquire() {
      if (available() || closed) return available();
      wanting += 1;
      try {
        await request();
      } finally {
        wanting -= 1;
      }
      return available();
    },
    release,
    onFreed(listener) {
      freedListeners.add(listener);
      return () => freedListeners.delete(listener);
    },
    setLimit(nextLimit) {
      limit = nextLimit;
    },
    async close() {
      closed = true;
      clearInterval(timer);
      await calling;
      await next;
      await hold(true).catch((err: unknown) =>
        logger.warn({ err }, 'global permits: leaving failed; the hold lapses by itself'),
      );
      subscriber?.disconnect();
      if (opened.ownsClient) opened.client.disconnect();
    },
  };
}
