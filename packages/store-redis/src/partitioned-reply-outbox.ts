import {
  type AddAndClaimResult,
  type ClaimedDelivery,
  type Delivery,
  type Settlement,
  SwitchboardError,
  silentLogger,
} from '@switchboard/core';
import { partitionOf, partitionPrefixOf } from './partitions.js';
import {
  type RedisReplyOutbox,
  type RedisReplyOutboxOptions,
  createRedisReplyOutbox,
} from './redis-reply-outbox.js';

export interface PartitionedReplyOutboxOptions extends RedisReplyOutboxOptions {
  /** How many partitions the deployment's deliveries spread over (`store.partitions`), >= 1. */
  partitions: number;
}

/**
 * How long an answer saying a partition has nothing due for a channel is trusted (ms, on the
 * callers' clock): what no announcement tells (a lease of a stopped replica ending, a retry of
 * another replica coming due, an announcement lost across a reconnect) is looked for again then,
 * as the reply sender's poll (every second by default) would.
 */
const IDLE_TRUSTED_FOR_MS = 1000;

/** What this instance knows of one partition's due chats on one channel. */
interface PartitionView {
  /** The `nowMs` at which it last answered that nothing was left due; null: something may be. */
  idleAt: number | null;
  /** The earliest due time it was given since (an add not due yet, a retry); Infinity: none. */
  dueAt: number;
  /** Announcements heard from it: an answer to a call begun before one says nothing of what it announced. */
  heard: number;
}

/** One channel: where the next claim starts, and what is known of each partition. */
interface ChannelView {
  cursor: number;
  partitions: PartitionView[];
}

/** The `nowMs` at which `view` may have a due chat again. */
function mayHaveDue(view: PartitionView, nowMs: number): boolean {
  return view.idleAt === null || nowMs - view.idleAt >= IDLE_TRUSTED_FOR_MS || view.dueAt <= nowMs;
}

/**
 * Each list in its own order, merged by `createdAt` (the partitions number their adds apart, so
 * that is the order across them).
 */
function mergedByCreation(lists: Delivery[][]): Delivery[] {
  const merged: Delivery[] = [];
  const next = lists.map(() => 0);
  for (;;) {
    let from = -1;
    for (const [index, list] of lists.entries()) {
      const head = list[next[index] as number];
      const best = lists[from]?.[next[from] as number];
      if (head !== undefined && (best === undefined || head.createdAt < best.createdAt)) from = index;
    }
    if (from === -1) return merged;
    merged.push((lists[from] as Delivery[])[next[from] as number] as Delivery);
    next[from] = (next[from] as number) + 1;
  }
}

/**
 * The reply outbox over `partitions` Redis outboxes, partition k with the prefix
 * `partitionPrefixOf(prefix, k)` (docs/design.md §5 "Partitioned outbox and kept outcomes"): a
 * delivery lives in the partition of its chat (the session key its origin has: the partition the
 * query pool gives that session), so a chat's order and one-at-a-time hold as in one outbox, and
 * the outcomes its removal keeps sit beside the session's. Each partition is an outbox of its
 * own, with its two connections.
 *
 * Across partitions there is no common add order: a claim asks the partitions in turn, starting
 * after the last one that handed a delivery out, so that none waits behind another's backlog
 * (within one, the oldest head first). A removal that claims next takes its own partition's next
 * head in the same call only when it is that partition's turn or no other may be due; otherwise
 * it removes, then claims in turn (a repeat of a same-call removal whose reply was lost goes the
 * same way, so that it gets the head that removal claimed). `moreDue` is true unless every other
 * partition answered, since its last announcement and within `IDLE_TRUSTED_FOR_MS`, that nothing
 * was due there.
 */
export async function createPartitionedReplyOutbox(
  options: PartitionedReplyOutboxOptions,
): Promise<RedisReplyOutbox> {
  const { partitions: count, ...outboxOptions } = options;
  if (!Number.isInteger(count) || count < 1) {
    throw new SwitchboardError('SB_CONFIG_INVALID', {
      message: `partitioned reply outbox: partitions must be a whole number >= 1, got ${count}`,
    });
  }
  const open = (index: number, replicaId?: string) =>
    createRedisReplyOutbox({
      ...outboxOptions,
      prefix: partitionPrefixOf(options.prefix, index),
      ...(replicaId === undefined ? {} : { replicaId }),
    });
  // One replica name in every partition's announcements.
  const first = await open(0, options.replicaId);
  const rest = await Promise.allSettled(
    Array.from({ length: count - 1 }, (_, index) => open(index + 1, first.replicaId)),
  );
  const failure = rest.find((opened) => opened.status === 'rejected');
  const parts = [first, ...rest.flatMap((opened) => (opened.status === 'fulfilled' ? [opened.value] : []))];
  let pendingAtStart: Array<Record<string, number>>;
  try {
    if (failure !== undefined) throw failure.reason;
    // What each partition held before its announcements were heard.
    pendingAtStart = await Promise.all(parts.map((part) => part.pending()));
  } catch (err) {
    await Promise.all(parts.map((part) => part.close()));
    throw err;
  }

  const logger = (options.logger ?? silentLogger).child({ component: 'outbox.redis' });
  const views = new Map<string, ChannelView>();
  /** `channel`'s view; made at a call's `nowMs` from the start's counts, else knowing nothing. */
  function viewOf(channel: string, nowMs?: number): ChannelView {
    let view = views.get(channel);
    if (view === undefined) {
      view = {
        cursor: 0,
        partitions: pendingAtStart.map((pending) => ({
          idleAt: nowMs !== undefined && pending[channel] === undefined ? nowMs : null,
          dueAt: Number.POSITIVE_INFINITY,
          heard: 0,
        })),
      };
      views.set(channel, view);
    }
    return view;
  }

  /** Calls under way per `<partition> <channel>` whose own announcement the caller need not hear. */
  const muted = new Map<string, number>();
  const mutedKey = (index: number, channel: string) => `${index} ${channel}`;
  for (const [index, part] of parts.entries()) {
    part.onDue((channel) => {
      const view = viewOf(channel).partitions[index] as PartitionView;
      view.idleAt = null;
      view.heard += 1;
    });
  }

  const partOf = (delivery: Delivery) => partitionOf(delivery.chat, count);

  /** Notes a due time given to partition `index` (NaN is due at once, and announced). */
  function dueLater(channel: string, index: number, dueAt: number): void {
    const view = viewOf(channel).partitions[index] as PartitionView;
    if (dueAt < view.dueAt) view.dueAt = dueAt;
  }

  /**
   * Learns from partition `index`'s answer at `nowMs` (`heard`: its announcements when the call
   * began), and hands its claim out with `moreDue` across the partitions. `mayHaveMore`: the
   * partition may have more due whatever the claim says: a repeat's answer says nothing of it
   * (its first call's announcement of more was this instance's own, which it does not hear), and
   * an add's may leave a due head unclaimed (`dueUnclaimed`).
   */
  function answered(
    channel: string,
    index: number,
    heard: number,
    nowMs: number,
    claimed: ClaimedDelivery | null,
    mayHaveMore = false,
  ): ClaimedDelivery | null {
    const view = viewOf(channel, nowMs);
    const partition = view.partitions[index] as PartitionView;
    if (claimed?.moreDue || mayHaveMore) partition.idleAt = null;
    else if (partition.heard === heard) {
      partition.idleAt = nowMs;
      if (partition.dueAt <= nowMs) partition.dueAt = Number.POSITIVE_INFINITY;
    }
    if (claimed === null) return null;
    view.cursor = (index + 1) % count;
    const othersDue = view.partitions.some((other, at) => at !== index && mayHaveDue(other, nowMs));
    return (othersDue || mayHaveMore) && !claimed.moreDue ? { ...claimed, moreDue: true } : claimed;
  }

  /** The partitions in turn from the cursor, those that may be due only when `dueOnly`. */
  function inTurn(channel: string, nowMs: number, dueOnly: boolean): number[] {
    const view = viewOf(channel, nowMs);
    return Array.from({ length: count }, (_, offset) => (view.cursor + offset) % count).filter(
      (index) => !dueOnly || mayHaveDue(view.partitions[index] as PartitionView, nowMs),
    );
  }

  /**
   * Claims from `order`'s partitions, the first that hands a delivery out. One that fails is
   * passed (its chats wait for it; the others' need not): the failure is thrown only when no
   * other answered with a delivery.
   */
  async function claimFrom(channel: string, nowMs: number, order: number[]): Promise<ClaimedDelivery | null> {
    let failure: { err: unknown } | undefined;
    for (const index of order) {
      const view = viewOf(channel, nowMs).partitions[index] as PartitionView;
      const heard = view.heard;
      let claimed: ClaimedDelivery | null;
      try {
        claimed = await (parts[index] as RedisReplyOutbox).claim(channel, nowMs);
      } catch (err) {
        failure ??= { err };
        view.idleAt = null;
        continue;
      }
      const handed = answered(channel, index, heard, nowMs, claimed);
      if (handed !== null) return handed;
    }
    if (failure !== undefined) throw failure.err;
    return null;
  }

  /**
   * `claimFrom` after a write that was applied (a removal, a settlement that stored a delivery): a
   * claim failing now must not make the caller repeat the write (a repeat answers `lost`). What is
   * due waits for the sender's next claim.
   */
  function claimAfterApplied(
    channel: string,
    nowMs: number,
    order: number[],
  ): Promise<ClaimedDelivery | null> {
    return claimFrom(channel, nowMs, order).catch((err: unknown) => {
      logger.warn({ err, channel }, 'claim after a removal failed: left to the next claim');
      return null;
    });
  }

  /** Announcements heard from partition `index` on `channel` so far (`answered`'s `heard`). */
  const heardFrom = (channel: string, index: number, nowMs?: number) =>
    (viewOf(channel, nowMs).partitions[index] as PartitionView).heard;

  /**
   * What an add of `delivery` to partition `index` did, learnt from (`heard`: that partition's
   * announcements when the add began) and, with `nowMs` (the caller claims), handed out across
   * the partitions: the claim the add made there, or else the one it makes in turn from
   * the partitions that may be due, its own too when the add left a due head unclaimed there.
   * Having looked, it passes no `dueUnclaimed` on. `by`: an `addAndClaim` claims there as `claim`
   * does, so claiming nothing says nothing is due there; a settlement's `addition` leases only its
   * own delivery, so claiming none without `dueUnclaimed` says nothing of the partition's other
   * chats (a retry this instance gave stays due), and the claim after it must not fail it
   * (`claimAfterApplied`).
   */
  async function addedAcross(
    delivery: Delivery,
    index: number,
    heard: number,
    nowMs: number | undefined,
    added: AddAndClaimResult,
    by: 'addAndClaim' | 'addition',
  ): Promise<AddAndClaimResult> {
    const { result, claim, dueUnclaimed } = added;
    // A duplicate claims nothing, whatever is due.
    if (result === 'duplicate') return added;
    const { channel } = delivery;
    dueLater(channel, index, delivery.notBefore);
    if (nowMs === undefined) return added;
    const saysWhatIsDue = by === 'addAndClaim' || claim !== null || dueUnclaimed === true;
    const handed = saysWhatIsDue ? answered(channel, index, heard, nowMs, claim, dueUnclaimed) : null;
    if (handed !== null) return { result, claim: handed };
    const claimIn = by === 'addAndClaim' ? claimFrom : claimAfterApplied;
    return { result, claim: await claimIn(channel, nowMs, inTurn(channel, nowMs, true)) };
  }

  return {
    durable: true,
    shared: true,
    replicaId: first.replicaId,
    now: first.now,
    keyPrefixes: parts.flatMap((part) => part.keyPrefixes),

    repeatsClaimNext(token) {
      return parts.some((part) => part.repeatsClaimNext(token));
    },

    async add(delivery) {
      const index = partOf(delivery);
      const result = await (parts[index] as RedisReplyOutbox).add(delivery);
      if (result === 'added') dueLater(delivery.channel, index, delivery.notBefore);
      return result;
    },

    async addAndClaim(delivery, nowMs) {
      const index = partOf(delivery);
      const heard = heardFrom(delivery.channel, index, nowMs);
      const added = await (parts[index] as RedisReplyOutbox).addAndClaim(delivery, nowMs);
      return addedAcross(delivery, index, heard, nowMs, added, 'addAndClaim');
    },

    additionOf(delivery, nowMs) {
      const index = partOf(delivery);
      const heard = heardFrom(delivery.channel, index, nowMs);
      const addition = (parts[index] as RedisReplyOutbox).additionOf(delivery, nowMs);
      return {
        ...addition,
        async answered(reply) {
          const added = await addition.answered(reply);
          return addedAcross(delivery, index, heard, nowMs, added, 'addition');
        },
      };
    },

    claim(channel, nowMs) {
      // Every partition, known idle or not: the sender's poll finds here what no announcement told.
      return claimFrom(channel, nowMs, inTurn(channel, nowMs, false));
    },

    delivered(claim, ended) {
      return (parts[partOf(claim.delivery)] as RedisReplyOutbox).delivered(claim, ended);
    },

    retry(claim, notBeforeMs, error) {
      const index = partOf(claim.delivery);
      dueLater(claim.delivery.channel, index, notBeforeMs);
      return (parts[index] as RedisReplyOutbox).retry(claim, notBeforeMs, error);
    },

    failed(claim, ended) {
      return (parts[partOf(claim.delivery)] as RedisReplyOutbox).failed(claim, ended);
    },

    async endAndClaim(claim, nowMs, ended) {
      const { channel } = claim.delivery;
      const index = partOf(claim.delivery);
      const part = parts[index] as RedisReplyOutbox;
      const view = viewOf(channel, nowMs);
      const othersDue = inTurn(channel, nowMs, true).some((other) => other !== index);
      // A repeat of a one-script removal whose reply was lost goes the same way, whatever the view
      // says by then: its partition hands it the delivery that removal leased (a removal, then a
      // claim in turn, would leave that delivery held until its lease ends).
      const repeat = part.repeatsClaimNext(claim.token);
      if (repeat || view.cursor === index || !othersDue) {
        const heard = (view.partitions[index] as PartitionView).heard;
        const { settlement, next } = await part.endAndClaim(claim, nowMs, ended);
        const handed = answered(channel, index, heard, nowMs, next, repeat);
        if (handed !== null || !othersDue) return { settlement, next: handed };
        const order = inTurn(channel, nowMs, true).filter((other) => other !== index);
        return { settlement, next: await claimAfterApplied(channel, nowMs, order) };
      }
      // Another partition's turn: remove, then claim in turn. Its own partition's announcement of
      // a next head is not passed on: that partition is asked in turn (or the claim says more is
      // due), so the caller learns of it from the answer.
      const key = mutedKey(index, channel);
      muted.set(key, (muted.get(key) ?? 0) + 1);
      let settlement: Settlement;
      try {
        // `delivered` and `failed` remove alike.
        settlement = await part.delivered(claim, ended);
      } finally {
        const left = (muted.get(key) as number) - 1;
        if (left === 0) muted.delete(key);
        else muted.set(key, left);
      }
      return { settlement, next: await claimAfterApplied(channel, nowMs, inTurn(channel, nowMs, true)) };
    },

    async pending() {
      const counts: Record<string, number> = {};
      for (const pending of await Promise.all(parts.map((part) => part.pending()))) {
        for (const [channel, count] of Object.entries(pending))
          counts[channel] = (counts[channel] ?? 0) + count;
      }
      return counts;
    },

    async list(channel) {
      return mergedByCreation(await Promise.all(parts.map((part) => part.list(channel))));
    },

    onDue(listener) {
      const stops = parts.map((part, index) =>
        part.onDue((channel) => {
          if (!muted.has(mutedKey(index, channel))) listener(channel);
        }),
      );
      return () => {
        for (const stop of stops) stop();
      };
    },

    async close() {
      await Promise.all(parts.map((part) => part.close()));
    },
  };
}
