import { randomUUID } from 'node:crypto';
import {
  type AddAndClaimResult,
  type ClaimedDelivery,
  type Delivery,
  type Outcome,
  type ReplySender,
  type SettledReplies,
  type Turn,
  createReplySender,
} from '@switchboard/core';
import { deliveryFixture } from '@switchboard/contracts';
import { eventually } from '@switchboard/testkit/eventually';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import {
  FAIL_FAST_OPTIONS,
  createPartitionedQueryPool,
  createPartitionedReplyOutbox,
  createRedisReplyOutbox,
  type RedisQueryPool,
  type RedisReplyOutbox,
  type ReplyAdditions,
} from '../src/index.js';
import { partitionOf, partitionPrefixOf } from '../src/partitions.js';
import { mayHaveRun } from '../src/redis-connection.js';
import {
  REDIS_URL,
  REPLY_OUTBOX_LEASE_MS,
  keyInPartition,
  manualClock,
  partitionTestConfig,
  queued,
  redisReachable,
  usePartitionedPools,
  usePools,
  usePrivateRedis,
  useReplyOutboxes,
} from './redis-harness.js';

const reachable = await redisReachable();

const PARTITIONS = 3;

/** Replies for `delivery`, claimed at `claimAt` when given, keeping what the add answered in `added`. */
function repliesOf(delivery: Delivery, claimAt?: number) {
  const added: AddAndClaimResult[] = [];
  const replies: SettledReplies = {
    delivery,
    ...(claimAt === undefined ? {} : { claimAt }),
    stored: (result) => added.push(result),
  };
  return { replies, added };
}

/** The `token` field of delivery `id` under outbox key prefix `outboxPrefix`, null when not claimed. */
const tokenOf = (admin: Redis, outboxPrefix: string, id: string) =>
  admin.hget(`${outboxPrefix}d:${id}`, 'token');

describe.skipIf(!reachable)("a complete that stores its turn's answer (pool/complete.lua)", () => {
  const pools = usePools();
  const outboxes = useReplyOutboxes();
  let admin: Redis | undefined;
  afterEach(() => {
    admin?.disconnect();
    admin = undefined;
  });

  /** A pool storing replies in the outbox of its prefix, and a turn of session `A` it claimed. */
  async function openWithTurn() {
    const clock = manualClock();
    const outbox = await outboxes.open({ prefix: pools.prefix });
    const pool = await pools.open({ now: clock.now, outbox });
    await pool.enqueue(queued('A', clock.now()));
    const turn = (await pool.claim()) as Turn;
    admin = new Redis(REDIS_URL);
    return { clock, outbox, pool, turn, outboxPrefix: `{${pools.prefix}}:reply-outbox:` };
  }

  /**
   * Completes `turn` on `pool` storing `delivery`, claimed at `claimAt` when given: the settlement,
   * what the add answered, and the channels `outbox` told this instance of meanwhile.
   */
  async function completeStoring(
    { pool, outbox, turn }: { pool: RedisQueryPool; outbox: RedisReplyOutbox; turn: Turn },
    delivery: Delivery,
    claimAt?: number,
  ) {
    const heard: string[] = [];
    const stopHearing = outbox.onDue((channel) => heard.push(channel));
    const { replies, added } = repliesOf(delivery, claimAt);
    try {
      return { settlement: await pool.complete(turn, [], { replies }), added, heard };
    } finally {
      stopHearing();
    }
  }

  /** An add that stored its delivery and claimed nothing. */
  const UNCLAIMED = [{ result: 'added', claim: null }];

  it('says it stores replies only when given an outbox', async () => {
    const { pool } = await openWithTurn();
    expect(pool.storesReplies).toBe(true);
    expect((await pools.open()).storesReplies).toBe(false);
  });

  describe('when the delivery can leave at once', () => {
    it('stores it as it completes the turn and hands the caller its own delivery as the claim', async () => {
      const opened = await openWithTurn();
      const { clock, outbox, pool, turn, outboxPrefix } = opened;
      const delivery = deliveryFixture(1, { chat: turn.session });
      const { settlement, added, heard } = await completeStoring(opened, delivery, clock.now());
      expect(settlement).toBe('settled');
      expect(heard).toEqual([]);
      expect(await pool.stats()).toMatchObject({ pending: 0, inflight: 0 });
      expect(added).toHaveLength(1);
      const claim = added[0]?.claim as ClaimedDelivery;
      expect(added[0]?.result).toBe('added');
      expect(claim.delivery).toBe(delivery);
      expect(claim.moreDue).toBe(false);
      expect(claim.token).toBe(await tokenOf(admin as Redis, outboxPrefix, delivery.id));
      // Leased to the caller: no other claim gets it, and its settlement removes it.
      expect(await outbox.claim(delivery.channel, clock.now())).toBeNull();
      expect(await outbox.delivered(claim)).toBe('settled');
      expect(await outbox.pending()).toEqual({});
    });

    it('stores it unclaimed without a claim time, announced to this instance as a new head', async () => {
      const opened = await openWithTurn();
      const delivery = deliveryFixture(1, { chat: opened.turn.session });
      expect(await completeStoring(opened, delivery)).toEqual({
        settlement: 'settled',
        added: UNCLAIMED,
        heard: [delivery.channel],
      });
      const claimed = await opened.outbox.claim(delivery.channel, opened.clock.now());
      expect(claimed?.delivery.id).toBe(delivery.id);
    });
  });

  describe('when its chat has a delivery ahead', () => {
    it('stores it behind that one and claims nothing', async () => {
      const opened = await openWithTurn();
      const { clock, outbox, turn } = opened;
      const ahead = deliveryFixture(1, { chat: turn.session });
      await outbox.add(ahead);
      const delivery = deliveryFixture(2, { chat: turn.session });
      // Not a head: nothing new to announce.
      expect(await completeStoring(opened, delivery, clock.now())).toEqual({
        settlement: 'settled',
        added: UNCLAIMED,
        heard: [],
      });
      const stored = await outbox.list(delivery.channel);
      expect(stored.map(({ id }) => id)).toEqual([ahead.id, delivery.id]);
    });
  });

  describe('when it becomes its chat head but cannot be leased (another chat is due first)', () => {
    it('stores it unclaimed, announces it to the others, and tells this instance through its answer that a delivery is due', async () => {
      const opened = await openWithTurn();
      const { clock, outbox, turn, outboxPrefix } = opened;
      const peer = await outboxes.open({ prefix: pools.prefix });
      const peerHeard: string[] = [];
      peer.onDue((channel) => peerHeard.push(channel));
      const older = deliveryFixture(1, { chat: 'another chat' });
      await outbox.add(older);
      // The add's own announcement of its head comes first, in order.
      await eventually(() => peerHeard.length === 1, 5000, 'the other instance hears the add');
      const delivery = deliveryFixture(2, { chat: turn.session });
      // Its caller claims once: no announcement of its own besides.
      expect(await completeStoring(opened, delivery, clock.now())).toEqual({
        settlement: 'settled',
        added: [{ result: 'added', claim: null, dueUnclaimed: true }],
        heard: [],
      });
      expect(await tokenOf(admin as Redis, outboxPrefix, delivery.id)).toBeNull();
      await eventually(() => peerHeard.length === 2, 5000, 'the other instance hears it');
      // The older chat first, then this one.
      expect((await peer.claim(delivery.channel, clock.now()))?.delivery.id).toBe(older.id);
      expect((await peer.claim(delivery.channel, clock.now()))?.delivery.id).toBe(delivery.id);
    });
  });

  describe('when it becomes its chat head not due yet', () => {
    it('stores it unclaimed and tells this instance nothing to claim', async () => {
      const opened = await openWithTurn();
      const { clock, outbox, turn } = opened;
      const delivery = deliveryFixture(1, { chat: turn.session, notBefore: clock.now() + 60_000 });
      expect(await completeStoring(opened, delivery, clock.now())).toEqual({
        settlement: 'settled',
        added: UNCLAIMED,
        heard: [],
      });
      expect(await outbox.claim(delivery.channel, clock.now())).toBeNull();
      expect((await outbox.claim(delivery.channel, clock.now() + 60_000))?.delivery.id).toBe(delivery.id);
    });
  });

  describe('when its id is stored already', () => {
    it('answers duplicate and stores nothing more', async () => {
      const opened = await openWithTurn();
      const delivery = deliveryFixture(1, { chat: opened.turn.session });
      await opened.outbox.add(delivery);
      expect(await completeStoring(opened, delivery, opened.clock.now())).toEqual({
        settlement: 'settled',
        added: [{ result: 'duplicate', claim: null }],
        heard: [],
      });
      expect(await opened.outbox.pending()).toEqual({ [delivery.channel]: 1 });
    });
  });

  describe('when the settlement is lost', () => {
    /** What a lost complete answers: nothing added, nothing announced. */
    const LOST = { settlement: 'lost', added: [], heard: [] };

    it('stores nothing for a turn settled already', async () => {
      const opened = await openWithTurn();
      expect(await opened.pool.complete(opened.turn)).toBe('settled');
      const delivery = deliveryFixture(1, { chat: opened.turn.session });
      expect(await completeStoring(opened, delivery, opened.clock.now())).toEqual(LOST);
      expect(await opened.outbox.pending()).toEqual({});
    });

    it('stores nothing for a turn another replica took over once its lease expired', async () => {
      const clock = manualClock();
      const outbox = await outboxes.open({ prefix: pools.prefix });
      // Renewals far apart on the real clock: the takeover below happens before any of them.
      const leases = { now: clock.now, leaseMs: 100_000, renewEveryMs: 60_000, fenceAfterMs: 90_000, outbox };
      const pool = await pools.open(leases);
      const taker = await pools.open(leases);
      await pool.enqueue(queued('A', clock.now()));
      const turn = (await pool.claim()) as Turn;
      clock.advance(100_001);
      expect(((await taker.claim()) as Turn).session).toBe(turn.session);
      const delivery = deliveryFixture(1, { chat: turn.session });
      expect(await completeStoring({ pool, outbox, turn }, delivery, clock.now())).toEqual(LOST);
      expect(await outbox.pending()).toEqual({});
    });
  });

  describe('when a command of the add fails as Redis runs it', () => {
    // Redis keeps what a script wrote before a command of it failed: any such failure (a key of
    // the wrong type here; on a cluster, a key of a slot moving) must find nothing written yet.

    it("leaves the turn held and the pool unchanged: the complete after it settles, and the session's next message is claimable", async () => {
      const { clock, outbox, pool, turn, outboxPrefix } = await openWithTurn();
      await pool.enqueue(queued('A', clock.now()));
      const delivery = deliveryFixture(1, { chat: turn.session });
      await admin?.set(`${outboxPrefix}chat:${delivery.channel}:${delivery.chat}`, 'not a list');
      const { replies, added } = repliesOf(delivery, clock.now());
      await expect(pool.complete(turn, [], { replies })).rejects.toThrow(/WRONGTYPE/);
      expect(added).toEqual([]);
      expect(await pool.stats()).toMatchObject({ inflight: 1, pending: 1 });
      expect(await outbox.pending()).toEqual({});
      expect(await pool.complete(turn)).toBe('settled');
      expect((await pool.claim())?.session).toBe(turn.session);
    });

    it("leaves its chat without it: made again, the complete stores the answer as its chat's head and claims it", async () => {
      const opened = await openWithTurn();
      const { clock, outbox, turn, outboxPrefix } = opened;
      const delivery = deliveryFixture(1, { chat: turn.session });
      // Read once the add knows the delivery heads its chat: the failure comes between its reads.
      await admin?.set(`${outboxPrefix}ready:${delivery.channel}`, 'not a sorted set');
      const { replies } = repliesOf(delivery, clock.now());
      await expect(opened.pool.complete(turn, [], { replies })).rejects.toThrow(/WRONGTYPE/);
      await admin?.del(`${outboxPrefix}ready:${delivery.channel}`);
      const again = await completeStoring(opened, delivery, clock.now());
      expect(again.settlement).toBe('settled');
      expect(again.added).toMatchObject([{ result: 'added', claim: { delivery, moreDue: false } }]);
      expect(await outbox.pending()).toEqual({ [delivery.channel]: 1 });
    });
  });

  describe('when the delivery has fields a script would store only halfway', () => {
    it('rejects before the call: the turn is still held and completes afterwards', async () => {
      const { clock, outbox, pool, turn } = await openWithTurn();
      const { replies, added } = repliesOf(
        deliveryFixture(1, { chat: turn.session, attempts: 1.5 }),
        clock.now(),
      );
      await expect(pool.complete(turn, [], { replies })).rejects.toThrow(TypeError);
      expect(added).toEqual([]);
      expect(await pool.stats()).toMatchObject({ inflight: 1 });
      expect(await outbox.pending()).toEqual({});
      expect(await pool.complete(turn)).toBe('settled');
    });
  });

  describe("when the outbox is not the pool's", () => {
    it('refuses the pool as it is made, naming both: another prefix, or other partitions', async () => {
      const elsewhere = await outboxes.open();
      await expect(pools.open({ outbox: elsewhere })).rejects.toMatchObject({
        code: 'SB_CONFIG_INVALID',
        message: expect.stringContaining(
          `(${elsewhere.keyPrefixes[0]}), the pool under 1, this one's at {${pools.prefix}}`,
        ),
      });
      const partitioned = await createPartitionedReplyOutbox({
        url: REDIS_URL,
        prefix: pools.prefix,
        leaseMs: REPLY_OUTBOX_LEASE_MS,
        partitions: PARTITIONS,
      });
      try {
        await expect(pools.open({ outbox: partitioned })).rejects.toMatchObject({
          code: 'SB_CONFIG_INVALID',
          message: expect.stringContaining(`stores under ${PARTITIONS} partition(s)`),
        });
      } finally {
        await partitioned.close();
      }
    });

    it('refuses a complete whose delivery it would store elsewhere, changing nothing', async () => {
      const clock = manualClock();
      const elsewhere = await outboxes.open();
      // Says it stores under the pool's prefix, and places the delivery under its own.
      const misplacing: ReplyAdditions = {
        keyPrefixes: [`{${pools.prefix}}:reply-outbox:`],
        additionOf: (delivery, nowMs) => elsewhere.additionOf(delivery, nowMs),
      };
      const pool = await pools.open({ now: clock.now, outbox: misplacing });
      await pool.enqueue(queued('A', clock.now()));
      const turn = (await pool.claim()) as Turn;
      const { replies } = repliesOf(deliveryFixture(1, { chat: turn.session }), clock.now());
      await expect(pool.complete(turn, [], { replies })).rejects.toThrow(/stores delivery .* under/);
      expect(await pool.stats()).toMatchObject({ inflight: 1 });
      expect(await elsewhere.pending()).toEqual({});
    });
  });

  describe('when a reply sender adds it through the complete (addThrough), it claims from the outbox only what is due', () => {
    const stopping: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const stop of stopping.splice(0)) await stop();
    });

    /**
     * A sender of `concurrency` sends over `outbox`, hearing none of its announcements when
     * `deaf`, counting the claims it asks for; its sends wait until `finish`.
     */
    async function senderOver(
      { outbox, clock }: { outbox: RedisReplyOutbox; clock: { now(): number } },
      concurrency: number,
      deaf = false,
    ) {
      let claims = 0;
      let started = false;
      const sent: string[] = [];
      const waiting: Array<() => void> = [];
      const counting = {
        ...outbox,
        claim: (channel: string, nowMs: number) => {
          claims += 1;
          return outbox.claim(channel, nowMs);
        },
        // Read as the sender starts, for the channels to claim from.
        pending: async () => {
          const pending = await outbox.pending();
          started = true;
          return pending;
        },
        ...(deaf ? { onDue: () => () => {} } : {}),
      };
      const sender = createReplySender({
        outbox: counting,
        channel: (id) => ({
          id,
          localSend: false,
          send: (origin) => {
            sent.push(origin.id);
            return new Promise<void>((resolve) => waiting.push(resolve));
          },
        }),
        policy: () => ({
          sendTimeoutMs: 5_000,
          concurrency,
          maxAgeMs: 60_000,
          retry: { baseDelayMs: 1_000, maxDelayMs: 10_000 },
        }),
        outcomes: { record: () => {} },
        // No poll within the test: only the sender's own claims find what is due.
        pollMs: 3_600_000,
        now: clock.now,
      });
      sender.start();
      stopping.push(() => sender.stop({ drainTimeoutMs: 0 }));
      await eventually(() => started, 5000, 'the sender looked for what is due as it started');
      return { sender, sent, claims: () => claims, finish: () => waiting.shift()?.() };
    }

    /** What `sender` adds through completing `turn` on `pool`. */
    const completeThrough = (sender: ReplySender, pool: RedisQueryPool, turn: Turn, delivery: Delivery) =>
      sender.addThrough(delivery, (claimAt, stored) =>
        pool.complete(turn, [], {
          replies: { delivery, ...(claimAt === undefined ? {} : { claimAt }), stored },
        }),
      );

    it('none when its chat has a delivery ahead: the removal of that one claims it', async () => {
      const opened = await openWithTurn();
      const { outbox, pool, turn } = opened;
      const { sender, sent, claims, finish } = await senderOver(opened, 2);
      const ahead = deliveryFixture(1, { chat: turn.session });
      await outbox.add(ahead);
      await eventually(() => sent.length === 1, 5000, 'the delivery ahead is sent');
      const claimsBefore = claims();
      const delivery = deliveryFixture(2, { chat: turn.session });
      expect(await completeThrough(sender, pool, turn, delivery)).toBe('settled');
      finish();
      await eventually(() => sent.length === 2, 5000, 'the removal claims it');
      expect(sent).toEqual([ahead.origin.id, delivery.origin.id]);
      // A claim once the complete freed its send would have been asked before that removal.
      expect(claims()).toBe(claimsBefore);
    });

    it('one when another chat is due first, told by the answer alone', async () => {
      const opened = await openWithTurn();
      const { outbox, pool, turn } = opened;
      const { sender, sent, claims, finish } = await senderOver(opened, 1, true);
      const older = deliveryFixture(1, { chat: 'another chat' });
      await outbox.add(older);
      const claimsBefore = claims();
      const delivery = deliveryFixture(2, { chat: turn.session });
      expect(await completeThrough(sender, pool, turn, delivery)).toBe('settled');
      await eventually(() => sent.length === 1, 5000, 'the older chat is claimed');
      expect(claims() - claimsBefore).toBe(1);
      finish();
      await eventually(() => sent.length === 2, 5000, 'the removal claims the answer');
      expect(sent).toEqual([older.origin.id, delivery.origin.id]);
      expect(claims() - claimsBefore).toBe(1);
    });
  });
});

describe.skipIf(!reachable)("a partitioned pool's complete that stores its turn's answer", () => {
  const pools = usePartitionedPools({ tag: 'sb-fold', partitions: PARTITIONS, global: 20 });
  const opened: RedisReplyOutbox[] = [];
  afterEach(async () => {
    for (const outbox of opened.splice(0)) await outbox.close();
  });

  async function open() {
    const clock = manualClock();
    const outbox = await createPartitionedReplyOutbox({
      url: REDIS_URL,
      prefix: pools.prefix,
      leaseMs: REPLY_OUTBOX_LEASE_MS,
      partitions: PARTITIONS,
    });
    opened.push(outbox);
    const pool = await pools.open({ now: clock.now, outbox });
    return { clock, outbox, pool };
  }

  it.each([
    ['of one partition', 1],
    ['of other partitions', PARTITIONS - 1],
  ])('refuses an outbox %s as it is made, naming both', async (_name, partitions) => {
    const outbox = await createPartitionedReplyOutbox({
      url: REDIS_URL,
      prefix: pools.prefix,
      leaseMs: REPLY_OUTBOX_LEASE_MS,
      partitions,
    });
    opened.push(outbox);
    await expect(pools.open({ outbox })).rejects.toMatchObject({
      code: 'SB_CONFIG_INVALID',
      message: expect.stringContaining(`stores under ${partitions} partition(s)`),
    });
  });

  it("stores the delivery in its session's partition and claims it there", async () => {
    const { clock, outbox, pool } = await open();
    expect(pool.storesReplies).toBe(true);
    const session = keyInPartition(2, PARTITIONS, 'session');
    await pool.enqueue(queued(session, clock.now()));
    const turn = (await pool.claim()) as Turn;
    const delivery = deliveryFixture(1, { chat: session });
    const { replies, added } = repliesOf(delivery, clock.now());
    expect(await pool.complete(turn, [], { replies })).toBe('settled');
    expect(added[0]?.claim?.delivery).toBe(delivery);
    const admin = new Redis(REDIS_URL);
    try {
      const partitionPrefix = `{${partitionPrefixOf(pools.prefix, 2)}}:reply-outbox:`;
      expect(await tokenOf(admin, partitionPrefix, delivery.id)).toBe(added[0]?.claim?.token);
    } finally {
      admin.disconnect();
    }
    expect(await outbox.delivered(added[0]?.claim as ClaimedDelivery)).toBe('settled');
  });

  it('claims a due delivery of another partition when its own is stored behind its chat', async () => {
    const { clock, outbox, pool } = await open();
    const session = keyInPartition(1, PARTITIONS, 'session');
    const elsewhere = deliveryFixture(1, { chat: keyInPartition(2, PARTITIONS, 'chat') });
    const ahead = deliveryFixture(2, { chat: session });
    await outbox.add(elsewhere);
    await outbox.add(ahead);
    // Partition 1's own chat is busy: its head is claimed.
    const busy = (await outbox.claim(ahead.channel, clock.now())) as ClaimedDelivery;
    expect(partitionOf(busy.delivery.chat, PARTITIONS)).toBe(1);
    await pool.enqueue(queued(session, clock.now()));
    const turn = (await pool.claim()) as Turn;
    const { replies, added } = repliesOf(deliveryFixture(3, { chat: session }), clock.now());
    expect(await pool.complete(turn, [], { replies })).toBe('settled');
    expect(added[0]?.result).toBe('added');
    expect(added[0]?.claim?.delivery.id).toBe(elsewhere.id);
  });

  it("claims its own partition's older due head when that one kept its delivery from being leased", async () => {
    const { clock, outbox, pool } = await open();
    const session = keyInPartition(1, PARTITIONS, 'session');
    const older = deliveryFixture(1, { chat: keyInPartition(1, PARTITIONS, 'chat') });
    await outbox.add(older);
    await pool.enqueue(queued(session, clock.now()));
    const turn = (await pool.claim()) as Turn;
    const { replies, added } = repliesOf(deliveryFixture(2, { chat: session }), clock.now());
    expect(await pool.complete(turn, [], { replies })).toBe('settled');
    // It looked itself: nothing is left for the caller to claim but what the claim says.
    expect(added).toEqual([
      { result: 'added', claim: expect.objectContaining({ delivery: older, moreDue: true }) },
    ]);
  });

  it('claims a retry that came due in its own partition when its delivery is stored behind its busy chat', async () => {
    const { clock, outbox, pool } = await open();
    const session = keyInPartition(1, PARTITIONS, 'session');
    const ahead = deliveryFixture(1, { chat: session });
    const retried = deliveryFixture(2, { chat: keyInPartition(1, PARTITIONS, 'chat') });
    await outbox.add(ahead);
    await outbox.add(retried);
    // The session's chat is busy; the other chat's head is retried by this instance, which
    // remembers when it comes due, after a claim that found nothing else due in that partition.
    expect((await outbox.claim(ahead.channel, clock.now()))?.delivery.id).toBe(ahead.id);
    const toRetry = (await outbox.claim(ahead.channel, clock.now())) as ClaimedDelivery;
    expect(toRetry).toMatchObject({ delivery: { id: retried.id }, moreDue: false });
    const error = { code: 'SB_CHANNEL_SEND_FAILED', message: 'down' };
    expect(await outbox.retry(toRetry, clock.now() + 10, error)).toBe('settled');
    clock.advance(20);
    await pool.enqueue(queued(session, clock.now()));
    const turn = (await pool.claim()) as Turn;
    const { replies, added } = repliesOf(deliveryFixture(3, { chat: session }), clock.now());
    expect(await pool.complete(turn, [], { replies })).toBe('settled');
    // Stored behind its chat, the answer says nothing of the partition's other chats.
    expect(added[0]?.claim?.delivery.id).toBe(retried.id);
  });
});

describe.skipIf(!reachable)('a complete storing its answer whose reply was lost after Redis ran it', () => {
  const redis = usePrivateRedis();
  const opened: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });

  const failFast = () => new Redis(redis.url(), { ...FAIL_FAST_OPTIONS, commandTimeout: 200 });

  /**
   * A pool (partitioned over `partitions`, or one) storing replies in its outbox; a turn of a
   * session in the last partition; its complete, storing a delivery claimed at once, timed out
   * while Redis held writes, and applied by Redis afterwards.
   */
  async function completeWithLostReply(partitions?: number) {
    const clock = manualClock();
    const prefix = partitions === undefined ? redis.pools.prefix : `sb-fold-lost-${randomUUID()}`;
    const outboxOptions = { url: redis.url(), prefix, leaseMs: REPLY_OUTBOX_LEASE_MS };
    const outbox =
      partitions === undefined
        ? await createRedisReplyOutbox(outboxOptions)
        : await createPartitionedReplyOutbox({ ...outboxOptions, partitions });
    opened.push(outbox);
    const poolOptions = { createClient: failFast, now: clock.now, outbox };
    let pool: RedisQueryPool;
    if (partitions === undefined) pool = await redis.pools.open(poolOptions);
    else {
      pool = await createPartitionedQueryPool({
        ...partitionTestConfig(20),
        ...poolOptions,
        prefix,
        partitions,
      });
      opened.push({ close: () => pool.shutdown() });
    }
    const last = (partitions ?? 1) - 1;
    const session = keyInPartition(last, partitions ?? 1, 'session');
    await pool.enqueue(queued(session, clock.now()));
    const turn = (await pool.claim()) as Turn;
    const delivery = deliveryFixture(1, { chat: session });
    const first = repliesOf(delivery, clock.now());

    await redis.admin.client('PAUSE', 600, 'WRITE');
    await expect(pool.complete(turn, [], { replies: first.replies })).rejects.toMatchObject({
      code: 'SB_STORE_UNAVAILABLE',
    });
    const outboxPrefix = `{${partitionPrefixOf(prefix, last)}}:reply-outbox:`;
    const leasedTo = await eventually(
      () => tokenOf(redis.admin, outboxPrefix, delivery.id),
      5000,
      'Redis ran the complete, leasing the delivery',
    );
    expect(first.added).toEqual([]);
    return { clock, outbox, pool, turn, delivery, leasedTo };
  }

  it.each([
    ['one pool', undefined],
    [`${PARTITIONS} partitions`, PARTITIONS],
  ])(
    '%s: its repeat answers settled and duplicate, the delivery stored once; the next claim hands back the lease the first call made',
    async (_name, partitions) => {
      const { clock, outbox, pool, turn, delivery, leasedTo } = await completeWithLostReply(partitions);
      const repeat = repliesOf(delivery, clock.now());
      expect(await pool.complete(turn, [], { replies: repeat.replies })).toBe('settled');
      expect(repeat.added).toEqual([{ result: 'duplicate', claim: null }]);
      expect(await outbox.pending()).toEqual({ [delivery.channel]: 1 });
      const claim = (await outbox.claim(delivery.channel, clock.now())) as ClaimedDelivery;
      expect(claim.delivery.id).toBe(delivery.id);
      expect(claim.token).toBe(leasedTo);
      expect(await outbox.delivered(claim)).toBe('settled');
    },
  );
});

describe.skipIf(!reachable)('a complete storing its answer that never left (Redis down)', () => {
  // Stopped: a Redis of this block's own.
  const redis = usePrivateRedis();
  const outboxes = useReplyOutboxes(redis.url);

  it('leaves the outbox nothing to repeat and tells this instance nothing to claim', async () => {
    const clock = manualClock();
    const outbox = await outboxes.open({ prefix: redis.pools.prefix });
    const poolClients: Redis[] = [];
    const createClient = () => {
      const client = new Redis(redis.url(), FAIL_FAST_OPTIONS);
      poolClients.push(client);
      return client;
    };
    const pool = await redis.pools.open({ createClient, now: clock.now, outbox });
    await pool.enqueue(queued('A', clock.now()));
    const turn = (await pool.claim()) as Turn;
    const heard: string[] = [];
    outbox.onDue((channel) => heard.push(channel));
    const { replies } = repliesOf(deliveryFixture(1, { chat: turn.session }), clock.now());

    await redis.server.stop();
    try {
      await eventually(
        () => poolClients.every((client) => client.status !== 'ready'),
        5000,
        'the pool saw Redis go',
      );
      const failure = await pool.complete(turn, [], { replies }).then(
        () => new Error('completed'),
        (err: unknown) => err,
      );
      expect(failure).toMatchObject({ code: 'SB_STORE_UNAVAILABLE' });
      expect(mayHaveRun(failure)).toBe(false);
      expect(heard).toEqual([]);
    } finally {
      await redis.server.start();
      await eventually(
        () => poolClients.every((client) => client.status === 'ready'),
        10_000,
        'the pool is back',
      );
    }
  });
});

describe.skipIf(!reachable)(
  "a reply sender adding a turn's answer through a complete whose reply was lost",
  () => {
    const redis = usePrivateRedis();
    const closing: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const close of closing.splice(0)) await close();
    });

    it('sends it once, the claim the lost complete made handed back to it, and settles its end; the repeat answers settled', async () => {
      const clock = manualClock();
      const outbox = await createRedisReplyOutbox({
        url: redis.url(),
        prefix: redis.pools.prefix,
        leaseMs: REPLY_OUTBOX_LEASE_MS,
      });
      closing.push(() => outbox.close());
      const createClient = () => new Redis(redis.url(), { ...FAIL_FAST_OPTIONS, commandTimeout: 200 });
      const pool = await redis.pools.open({ createClient, now: clock.now, outbox });
      await pool.enqueue(queued('A', clock.now()));
      const turn = (await pool.claim()) as Turn;
      const delivery = deliveryFixture(1, { chat: turn.session });
      const sent: string[] = [];
      const outcomes: Outcome[] = [];
      const channel = {
        id: delivery.channel,
        localSend: false,
        send: async (_origin: unknown, replies: readonly { text: string }[]) => {
          sent.push(replies.map((reply) => reply.text).join());
        },
      };
      const sender = createReplySender({
        outbox,
        channel: (id) => (id === delivery.channel ? channel : undefined),
        policy: () => ({
          sendTimeoutMs: 5_000,
          concurrency: 4,
          maxAgeMs: 60_000,
          retry: { baseDelayMs: 1_000, maxDelayMs: 10_000 },
        }),
        outcomes: { record: (outcome) => outcomes.push(outcome) },
        // No poll within the test: what sends the delivery is the sender's own claim.
        pollMs: 3_600_000,
      });
      sender.start();
      closing.push(() => sender.stop({ drainTimeoutMs: 1_000 }));
      // As the turn's settlement completes it, and repeats the same call when its reply was lost.
      const complete = () =>
        sender.addThrough(delivery, (claimAt, stored) =>
          pool.complete(turn, [], {
            replies: { delivery, ...(claimAt === undefined ? {} : { claimAt }), stored },
          }),
        );

      await redis.admin.client('PAUSE', 600, 'WRITE');
      await expect(complete()).rejects.toMatchObject({ code: 'SB_STORE_UNAVAILABLE' });
      // The outbox tells its sender of the claim the lost add may have made, and hands it back to
      // the sender's next claim once Redis ran both.
      await eventually(() => outcomes.length === 2, 5000, "the delivery's end settled");
      expect(await complete()).toBe('settled');
      expect(sent).toEqual(['answer 1,and more']);
      expect(outcomes.map((outcome) => outcome.kind)).toEqual(['completed', 'completed']);
      expect(await outbox.pending()).toEqual({});
    });
  },
);
