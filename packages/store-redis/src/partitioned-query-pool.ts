import type {
  ClaimedTurn,
  PoolStats,
  SettleOptions,
  Settlement,
  RunningTurn,
  SessionKey,
  WaitingSession,
} from '@switchboard/core';
import { type GlobalPermits, createGlobalPermits } from './global-permits.js';
import type { StoreHealth } from './health.js';
import { DEFAULT_LEASE_TIMING } from './lease-timing.js';
import { partitionOf, partitionPrefixOf } from './partitions.js';
import {
  type RedisQueryPool,
  type RedisQueryPoolOptions,
  type ReplicaView,
  createRedisQueryPool,
} from './redis-query-pool.js';
import { defaultReplicaId } from './replica-id.js';

export interface PartitionedQueryPoolOptions extends RedisQueryPoolOptions {
  /** How many partitions the sessions spread over (2 or more; one is `createRedisQueryPool`). */
  partitions: number;
}

/**
 * The query pool over partitions (docs/design.md §5 "Partitions"): each session belongs to one of
 * `partitions` pools, each under its own hash tag `{<prefix>#<k>}` (one Redis Cluster slot), so
 * the partitions spread over the shards. A session's order, debounce and dedup hold inside its
 * partition; pipeline limits and tenant shares hold per partition; the global limit is one, held
 * as permits in the `{<prefix>}` slot (`createGlobalPermits`). Claims go round the partitions
 * that may have work, from where the last one ended, so no partition starves another.
 */
export async function createPartitionedQueryPool(
  options: PartitionedQueryPoolOptions,
): Promise<RedisQueryPool> {
  const count = options.partitions;
  const replicaId = options.replicaId ?? defaultReplicaId();
  const timing = { ...DEFAULT_LEASE_TIMING, ...options };
  const parts: RedisQueryPool[] = [];
  const runningTurns = () => parts.reduce((sum, part) => sum + part.heldTurns, 0);
  // A factory's connection is this pool's own to close; a URL's the permits open and close.
  const permitClient = options.url === undefined ? options.createClient?.('commands') : undefined;
  const permits: GlobalPermits = await createGlobalPermits({
    url: options.url,
    client: permitClient,
    replication: options.replication,
    prefix: options.prefix,
    replicaId,
    limit: options.concurrency.global,
    running: runningTurns,
    holdMs: timing.leaseMs,
    renewEveryMs: timing.renewEveryMs,
    fenceAfterMs: timing.fenceAfterMs,
    onLapsed: () => {
      for (const part of parts) part.giveUpTurns();
    },
    logger: options.logger,
  }).catch((err: unknown) => {
    permitClient?.disconnect();
    throw err;
  });
  /** The partition a claim asks first, and whose settlements and enqueues may claim in their step. */
  let cursor = 0;
  /** Partitions whose last claim found nothing more, none announcing work since (`claimFrom`). */
  const drained = new Set<number>();
  /** Another partition than `index` may have work: it is not known drained. */
  const othersMayRun = (index: number) => parts.some((_, other) => other !== index && !drained.has(other));
  try {
    for (let index = 0; index < count; index += 1) {
      parts.push(
        await createRedisQueryPool({
          ...options,
          prefix: partitionPrefixOf(options.prefix, index),
          replicaId,
          // While the limit is full, a write claims in its step only in its partition's turn, or
          // when no other partition may have work: else a partition with a backlog would keep
          // every freed slot while older heads of the others wait.
          permits: {
            take: permits.take,
            takeInStep: (ending) =>
              (cursor === index ||
                !othersMayRun(index) ||
                permits.fleetFree > 0 ||
                permits.free(ending) > 1) &&
              permits.takeInStep(ending),
            put: permits.put,
            endingGone: permits.endingGone,
          },
        }),
      );
    }
  } catch (err) {
    await Promise.all(parts.map((part) => part.shutdown()));
    await permits.close();
    permitClient?.disconnect();
    throw err;
  }

  const indexOf = (session: SessionKey) => partitionOf(session, count);
  const partOf = (session: SessionKey) => parts[indexOf(session)] as RedisQueryPool;
  const first = parts[0] as RedisQueryPool;
  const runnableListeners = new Set<() => void>();
  const wakeUp = () => {
    for (const listener of runnableListeners) listener();
  };
  // A claim asks the drained partitions last, and a turn's `more` does not count them. Each
  // announcement is counted, so that a claim under way when one arrives does not mark its
  // partition drained over it.
  const announced = parts.map(() => 0);
  parts.forEach((part, index) => {
    part.onRunnable(() => {
      drained.delete(index);
      announced[index] = (announced[index] as number) + 1;
      wakeUp();
    });
  });
  permits.onFreed(wakeUp);

  /** The partitions in the order a claim asks them: from the cursor on, the drained ones last. */
  function claimOrder(): number[] {
    const order = parts.map((_, offset) => (cursor + offset) % count);
    return [...order.filter((index) => !drained.has(index)), ...order.filter((index) => drained.has(index))];
  }

  /**
   * A turn of partition `index`, claimed by a claim or in a step: the next turn is the next
   * partition's; `more` while the partition says so, or another one may have work.
   */
  function turnOf(turn: ClaimedTurn, index: number): ClaimedTurn {
    cursor = (index + 1) % count;
    return turn.more || !othersMayRun(index) ? turn : { ...turn, more: true };
  }

  /**
   * A turn a claim sent before the permits fenced lands: it may not run (its permit may be another
   * replica's by now), so it goes back unrun.
   */
  function handedBackFenced(turn: ClaimedTurn, index: number): boolean {
    if (!permits.fenced) return false;
    void (parts[index] as RedisQueryPool).abandon(turn, { ran: false });
    return true;
  }

  /** Claims from partition `index`, noting it drained when it has nothing more and said nothing meanwhile. */
  async function claimFrom(index: number): Promise<ClaimedTurn | null> {
    const [announcedBefore, refusedBefore] = [announced[index], permits.refusals];
    const turn = await (parts[index] as RedisQueryPool).claim();
    // A claim refused for want of a permit (another took it meanwhile) says nothing of the partition.
    const asked = permits.refusals === refusedBefore;
    if (asked && turn?.more !== true && announced[index] === announcedBefore) drained.add(index);
    return turn;
  }

  /**
   * A settlement whose turn's permit went unused (no next turn claimed in its step). While the
   * limit is full it is given back before the settlement resolves, so that the freed slot is every
   * replica's once settled; while it is not, it stays for this replica's next claim (a replica left
   * short announces it and is given the unused ones, an idle one gives them back). Its partition
   * wakes the claim loop when it has work; when it has none and another partition may, the loop
   * is woken here.
   */
  async function releasing(settling: Promise<Settlement>, index: number): Promise<Settlement> {
    const announcedBefore = announced[index];
    const settlement = await settling;
    if (permits.fleetFree === 0) await permits.release();
    if (announced[index] === announcedBefore && othersMayRun(index)) wakeUp();
    return settlement;
  }

  const pool: RedisQueryPool = {
    durable: true,
    // Each partition's pool stores them with the outbox's partition of the session (its chat).
    storesReplies: options.outbox !== undefined,
    replicaId,
    get heldTurns() {
      return runningTurns();
    },
    giveUpTurns() {
      for (const part of parts) part.giveUpTurns();
    },

    enqueue: (queued, delivery, enqueueOptions) =>
      partOf(queued.session).enqueue(queued, delivery, enqueueOptions),

    async claim() {
      // A partition whose claims fail (its shard is down) stops none of the others.
      let failure: unknown;
      for (const index of claimOrder()) {
        if (!(await permits.acquire())) return null;
        const turn = await claimFrom(index).catch((err: unknown) => {
          failure ??= err;
          return null;
        });
        if (turn !== null && handedBackFenced(turn, index)) return null;
        if (turn !== null) return turnOf(turn, index);
      }
      if (failure !== undefined) throw failure;
      // Nothing to run here: the permits go back for the other replicas.
      await permits.release();
      return null;
    },

    complete(turn, ended, settleOptions) {
      const index = indexOf(turn.session);
      return releasing(partOf(turn.session).complete(turn, ended, withTaker(settleOptions, index)), index);
    },
    retry(turn, delayMs, finalIds, ended, settleOptions) {
      const index = indexOf(turn.session);
      const settling = partOf(turn.session).retry(
        turn,
        delayMs,
        finalIds,
        ended,
        withTaker(settleOptions, index),
      );
      return releasing(settling, index);
    },
    abandon: (turn, abandonOptions) =>
      releasing(partOf(turn.session).abandon(turn, abandonOptions), indexOf(turn.session)),

    onRunnable(listener) {
      runnableListeners.add(listener);
      return () => runnableListeners.delete(listener);
    },
    onClaimedAhead(taker) {
      const offs = parts.map((part, index) =>
        part.onClaimedAhead((turn) => {
          if (!handedBackFenced(turn, index)) taker(turnOf(turn, index));
        }),
      );
      return () => {
        for (const off of offs) off();
      };
    },
    onLeaseLost(listener) {
      const offs = parts.map((part) => part.onLeaseLost(listener));
      return () => {
        for (const off of offs) off();
      };
    },
    async recover() {
      return (await Promise.all(parts.map((part) => part.recover()))).flat();
    },
    close() {
      for (const part of parts) part.close();
    },
    async reconfigure(shared) {
      await Promise.all(parts.map((part) => part.reconfigure(shared)));
      permits.setLimit(shared.concurrency.global);
    },
    async takeAll() {
      return (await Promise.all(parts.map((part) => part.takeAll()))).flat();
    },
    async stats() {
      return sumStats(await Promise.all(parts.map((part) => part.stats())));
    },
    async sessions(limit, pipelines) {
      const views = await Promise.all(parts.map((part) => part.sessions(limit, pipelines)));
      const waiting: WaitingSession[] = views
        .flatMap((view) => view.waiting)
        .sort((a, b) => b.oldestWaitMs - a.oldestWaitMs)
        .slice(0, limit);
      const running: RunningTurn[] = views.flatMap((view) => view.running).sort((a, b) => b.ageMs - a.ageMs);
      return { waiting, running };
    },
    async seen(deliveryKey) {
      return (await Promise.all(parts.map((part) => part.seen(deliveryKey)))).includes(true);
    },
    async locate(messageId) {
      const found = await Promise.all(parts.map((part) => part.locate?.(messageId) ?? null));
      return found.find((state) => state !== null) ?? null;
    },
    async replicas() {
      return mergeReplicas((await Promise.all(parts.map((part) => part.replicas()))).flat());
    },
    // The fleet's configuration version is one: partition 0's slot holds it.
    publishConfig: (digest) => first.publishConfig(digest),
    fleetConfig: () => first.fleetConfig(),
    async reportConfig(report) {
      await Promise.all(parts.map((part) => part.reportConfig(report)));
    },
    async health() {
      const checks = await Promise.all(parts.map((part) => part.health()));
      return checks.find((check) => !check.ok) ?? (checks[0] as StoreHealth);
    },
    async shutdown() {
      await Promise.all(parts.map((part) => part.shutdown()));
      await permits.close();
      permitClient?.disconnect();
    },
  };

  /** Settlement options whose next turn, claimed in the step, counts as this replica's work. */
  function withTaker(settleOptions: SettleOptions | undefined, index: number): SettleOptions | undefined {
    const take = settleOptions?.claimNext;
    return take === undefined
      ? settleOptions
      : {
          ...settleOptions,
          claimNext: (turn) => {
            if (!handedBackFenced(turn, index)) take(turnOf(turn, index));
          },
        };
  }

  return pool;
}

/** The stats of the partitions as one pool's. */
function sumStats(all: readonly PoolStats[]): PoolStats {
  const total: PoolStats = {
    pending: 0,
    inflight: 0,
    sessions: 0,
    inflightByPipeline: {},
    pendingByPipeline: {},
    oldestWaitMsByPipeline: {},
  };
  for (const stats of all) {
    total.pending += stats.pending;
    total.inflight += stats.inflight;
    total.sessions += stats.sessions;
    for (const [pipeline, value] of Object.entries(stats.inflightByPipeline))
      total.inflightByPipeline[pipeline] = (total.inflightByPipeline[pipeline] ?? 0) + value;
    for (const [pipeline, value] of Object.entries(stats.pendingByPipeline))
      total.pendingByPipeline[pipeline] = (total.pendingByPipeline[pipeline] ?? 0) + value;
    for (const [pipeline, value] of Object.entries(stats.oldestWaitMsByPipeline))
      total.oldestWaitMsByPipeline[pipeline] = Math.max(total.oldestWaitMsByPipeline[pipeline] ?? 0, value);
  }
  return total;
}

/** One entry per replica: its turns in every partition, its newest heartbeat and report. */
function mergeReplicas(views: readonly ReplicaView[]): ReplicaView[] {
  const byId = new Map<string, ReplicaView>();
  for (const view of views) {
    const known = byId.get(view.id);
    if (known === undefined) {
      byId.set(view.id, { ...view });
      continue;
    }
    known.turnsRunning += view.turnsRunning;
    known.alive ||= view.alive;
    known.heartbeatExpiresAt = Math.max(known.heartbeatExpiresAt ?? 0, view.heartbeatExpiresAt ?? 0) || null;
    known.config ??= view.config;
  }
  return [...byId.values()];
}
