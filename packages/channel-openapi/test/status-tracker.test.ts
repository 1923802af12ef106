import {
  type Delivery,
  type MessageStatus,
  type MessageStatusStore,
  type Outcome,
  type Reply,
  type Turn,
  type TurnStart,
  createMemoryMessageStatusStore,
  parseInboundMessage,
  silentLogger,
  statusVersion,
} from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { describe, expect, it, vi } from 'vitest';
import type { ChannelEvents, EventOrigin } from '../src/channel-events.js';
import { createStatusTracker } from '../src/status-tracker.js';

const message = parseInboundMessage({
  id: '01JSTATUS00000000000000001',
  platform: 'openapi',
  channel: 'api',
  chat: { type: 'person', id: 's1' },
  sender: { id: 'u1' },
  text: 'hello',
  platform_message_id: 'p1',
  received_at: 0,
});

/** The final status another replica stored for `message`, after running its turn `t2`. */
const completedElsewhere: MessageStatus = {
  id: message.id,
  channel: 'api',
  tenant: 'default',
  generation: 0,
  status: 'completed',
  pipeline: 'echo',
  rule: null,
  turn: 't2',
  replies: [{ text: 'stored by the other replica' }],
  delivery: null,
  error: null,
  trace_id: null,
  updated_at: 2,
};

/**
 * A tracker over a memory store that records its writes and reads, with hand-fired events; with
 * `locate`, as on a replica sharing its pool.
 */
function trackerHarness(
  locate?: ChannelEvents['locate'],
  sweep?: { sweepEveryMs?: number; staleAfterMs?: number; checkElsewhereEveryMs?: number },
) {
  const store = createMemoryMessageStatusStore();
  const writes: string[] = [];
  const reads: string[] = [];
  const counting: MessageStatusStore = {
    ...store,
    put: (status) => {
      writes.push(status.status);
      return store.put(status);
    },
    get: (id) => {
      reads.push(id);
      return store.get(id);
    },
  };
  let emitOutcome: (outcome: Outcome, origin?: EventOrigin, committed?: Promise<boolean>) => void = () => {};
  let emitTurnStart: (turn: TurnStart, origin?: EventOrigin) => void = () => {};
  let emitRepliesStored: (delivery: Delivery) => void = () => {};
  const tracker = createStatusTracker({
    channelId: 'api',
    statuses: counting,
    logger: silentLogger,
    ...sweep,
    events: {
      subscribeOutcomes: (listener) => {
        emitOutcome = listener;
        return () => {};
      },
      subscribeTurnStarts: (listener) => {
        emitTurnStart = listener;
        return () => {};
      },
      subscribeRepliesStored: (listener) => {
        emitRepliesStored = listener;
        return () => {};
      },
      ...(locate === undefined ? {} : { locate }),
    },
  });
  const startTurn = () => {
    const queued = {
      message,
      session: 's',
      pipeline: 'echo',
      routedByRule: false,
      attempt: 1,
      acceptedAt: 0,
    };
    const turn: Turn = {
      id: 't1',
      session: 's',
      pipeline: 'echo',
      messages: [queued],
      attempt: 1,
      lease: { token: '1', expiresAt: null },
    };
    emitTurnStart(turn);
  };
  const complete = (
    kind: Outcome['kind'] = 'completed',
    of = message,
    replies: Reply[] = [],
    committed?: Promise<boolean>,
  ) =>
    emitOutcome(
      { kind, at: 1, message: of, session: 's', pipeline: 'echo', turnId: 't1', replies },
      'local',
      committed,
    );
  /** The events of a turn another replica ran, as the relay hands them over. */
  const relayed = {
    startTurn: (of = message) =>
      emitTurnStart({ id: 't2', pipeline: 'echo', messages: [{ message: of }] }, 'relayed'),
    complete: (of = message, replies: Reply[] = [], kind: Outcome['kind'] = 'completed') =>
      emitOutcome(
        { kind, at: 1, message: of, session: 's', pipeline: 'echo', turnId: 't2', replies },
        'relayed',
      ),
  };
  /** The turn's replies were stored in the outbox and the turn completed. */
  const storeReplies = (replies: Reply[]) =>
    emitRepliesStored({
      id: 't1',
      channel: 'api',
      chat: 's',
      origin: message,
      messages: [{ message, session: 's', pipeline: 'echo', attempt: 1 }],
      turnId: 't1',
      replies,
      ownsOutcome: true,
      createdAt: 1,
      attempts: 0,
      notBefore: 1,
    });
  /** Any local outcome, as the bus hands it over. */
  const emitLocal = (outcome: Outcome) => emitOutcome(outcome, 'local');
  return {
    store,
    statuses: counting,
    writes,
    reads,
    tracker,
    startTurn,
    complete,
    relayed,
    storeReplies,
    emitOutcome: emitLocal,
  };
}

/**
 * Makes `statuses` hold a `pending` write until the returned function is called, while the others
 * land at once; `writes` logs each write's delivery state.
 */
function holdPendingWrite(statuses: MessageStatusStore, store: MessageStatusStore, writes: string[]) {
  let landPending: () => void = () => {};
  const pendingHeld = new Promise<void>((resolve) => {
    landPending = resolve;
  });
  statuses.put = async (status) => {
    writes.push(status.delivery ?? 'none');
    if (status.delivery === 'pending') await pendingHeld;
    await store.put(status);
  };
  return landPending;
}

describe('status tracker', () => {
  describe('when the replies wait in the outbox, then are delivered', () => {
    it('reads completed with delivery pending and the replies (stored, the watch still waiting), then delivered', async () => {
      const { tracker, store, writes, startTurn, complete, storeReplies } = trackerHarness();
      const watch = tracker.watch(message.id);
      tracker.queued(message.id, { pipeline: 'echo', rule: null, traceId: null });
      startTurn();
      storeReplies([{ text: 'on its way' }]);
      const pending = { status: 'completed', delivery: 'pending', replies: [{ text: 'on its way' }] };
      expect(await tracker.current(message.id)).toMatchObject(pending);
      // What another replica, which does not follow the message, reads meanwhile.
      await eventually(async () => (await store.get(message.id))?.delivery === 'pending');
      expect(await store.get(message.id)).toMatchObject(pending);
      const waited = watch.wait(1000);
      complete('completed', message, [{ text: 'on its way' }]);
      const final = await waited;
      expect(final?.status).toMatchObject({
        status: 'completed',
        delivery: 'delivered',
        replies: [{ text: 'on its way' }],
      });
      await eventually(async () => (await store.get(message.id))?.delivery === 'delivered');
      expect(writes).toEqual(['completed', 'completed']);
    });

    it('reads the same pending status in memory and in the store once this replica sent the replies', async () => {
      const { tracker, store, writes, startTurn, storeReplies } = trackerHarness();
      tracker.queued(message.id, { pipeline: 'echo', rule: null, traceId: null });
      startTurn();
      storeReplies([{ text: 'on its way' }]);
      await eventually(async () => (await store.get(message.id))?.delivery === 'pending');
      // The send of this replica's sender, before the delivery's end is recorded.
      await tracker.appendReplies(message.id, [{ text: 'on its way' }], true);
      expect(await tracker.current(message.id)).toEqual(await store.get(message.id));
      expect(writes).toEqual(['completed']);
    });

    it('keeps the replies sent before the replies-stored event once, in memory and in the store', async () => {
      const { tracker, store, startTurn, storeReplies } = trackerHarness();
      tracker.queued(message.id, { pipeline: 'echo', rule: null, traceId: null });
      startTurn();
      // A sender that claimed the delivery at once, before the turn's completion was answered.
      await tracker.appendReplies(message.id, [{ text: 'on its way' }], true);
      storeReplies([{ text: 'on its way' }]);
      await eventually(async () => (await store.get(message.id))?.delivery === 'pending');
      expect((await store.get(message.id))?.replies).toEqual([{ text: 'on its way' }]);
      expect(await tracker.current(message.id)).toEqual(await store.get(message.id));
    });

    it('reads dead_lettered with delivery failed and none of the replies when the outbox gives them up', async () => {
      const { tracker, store, startTurn, emitOutcome, storeReplies } = trackerHarness();
      const watch = tracker.watch(message.id);
      tracker.queued(message.id, { pipeline: 'echo', rule: null, traceId: null });
      startTurn();
      storeReplies([{ text: 'never sent' }]);
      emitOutcome({
        kind: 'dead_lettered',
        reason: 'delivery_failed',
        at: 1,
        message,
        session: 's',
        pipeline: 'echo',
        turnId: 't1',
        replies: [{ text: 'never sent' }],
      });
      const final = await watch.wait(1000);
      expect(final?.status).toMatchObject({ status: 'dead_lettered', delivery: 'failed', replies: [] });
      await eventually(async () => (await store.get(message.id))?.status === 'dead_lettered');
      expect((await store.get(message.id))?.replies).toEqual([]);
    });

    it('shows none of them either when the outcome does not carry them (kept without the replies)', async () => {
      const { tracker, startTurn, emitOutcome, storeReplies } = trackerHarness();
      const watch = tracker.watch(message.id);
      tracker.queued(message.id, { pipeline: 'echo', rule: null, traceId: null });
      startTurn();
      storeReplies([{ text: 'never sent' }]);
      emitOutcome({
        kind: 'dead_lettered',
        reason: 'delivery_failed',
        at: 1,
        message,
        session: 's',
        pipeline: 'echo',
        turnId: 't1',
      });
      expect((await watch.wait(1000))?.status).toMatchObject({ delivery: 'failed', replies: [] });
    });
  });

  describe('when the outcome comes with the commit that ends the message (an outbox of this process)', () => {
    it('writes the final status in that tick, not behind the pending write, and answers once that commit succeeded', async () => {
      const { tracker, store, statuses, writes, startTurn, complete, storeReplies } = trackerHarness();
      const landPending = holdPendingWrite(statuses, store, writes);
      let commit: (done: boolean) => void = () => {};
      const committed = new Promise<boolean>((resolve) => {
        commit = resolve;
      });
      const watch = tracker.watch(message.id);
      let answered = false;
      const waited = watch.wait(1000).finally(() => {
        answered = true;
      });
      startTurn();
      storeReplies([{ text: 'on its way' }]);
      complete('completed', message, [{ text: 'on its way' }], committed);
      expect(writes).toEqual(['pending', 'delivered']);
      await eventually(async () => (await store.get(message.id))?.delivery === 'delivered');
      // Written, but the commit ending the message has not succeeded: nobody is told yet.
      await new Promise((resolve) => setImmediate(resolve));
      expect(answered).toBe(false);
      expect((await tracker.current(message.id))?.delivery).toBe('pending');
      commit(true);
      const final = await waited;
      expect(final?.status).toMatchObject({ status: 'completed', delivery: 'delivered' });
      // The pending write landing last does not replace the final status.
      landPending();
      await new Promise((resolve) => setImmediate(resolve));
      expect(await store.get(message.id)).toMatchObject({ status: 'completed', delivery: 'delivered' });
    });

    it('writes no pending status when the replies-stored event comes after that outcome: one commit, not two', async () => {
      const { tracker, store, writes, startTurn, complete, storeReplies } = trackerHarness();
      let commit: (done: boolean) => void = () => {};
      const committed = new Promise<boolean>((resolve) => {
        commit = resolve;
      });
      const watch = tracker.watch(message.id);
      startTurn();
      // This process's sender claimed and sent at once: the delivery ended before the turn's
      // completion told the channel its replies were stored.
      complete('completed', message, [{ text: 'on its way' }], committed);
      storeReplies([{ text: 'on its way' }]);
      expect((await tracker.current(message.id))?.delivery).toBe('pending');
      commit(true);
      expect((await watch.wait(1000))?.status).toMatchObject({ delivery: 'delivered' });
      await eventually(async () => (await store.get(message.id))?.delivery === 'delivered');
      // Later events write again as before: nothing is left marked as ending.
      await new Promise((resolve) => setImmediate(resolve));
      expect(writes).toEqual(['completed']);
    });

    it('writes the skipped pending status after all when the commit ending the message fails', async () => {
      const { tracker, writes, startTurn, complete, storeReplies } = trackerHarness();
      let commit: (done: boolean) => void = () => {};
      const committed = new Promise<boolean>((resolve) => {
        commit = resolve;
      });
      startTurn();
      complete('completed', message, [{ text: 'on its way' }], committed);
      storeReplies([{ text: 'on its way' }]);
      commit(false);
      // The final status joined the failed commit; the pending one follows on its own.
      await eventually(async () => writes.length === 2);
      expect(writes).toEqual(['completed', 'completed']);
      expect((await tracker.current(message.id))?.delivery).toBe('pending');
    });

    it('without that commit (statuses in another store), writes the final status only after the pending one landed', async () => {
      const { tracker, store, statuses, writes, startTurn, complete, storeReplies } = trackerHarness();
      const landPending = holdPendingWrite(statuses, store, writes);
      const watch = tracker.watch(message.id);
      startTurn();
      storeReplies([{ text: 'on its way' }]);
      complete('completed', message, [{ text: 'on its way' }]);
      await new Promise((resolve) => setImmediate(resolve));
      // A store outside the commit (the Redis audit outbox) may not order them itself.
      expect(writes).toEqual(['pending']);
      landPending();
      expect((await watch.wait(1000))?.status).toMatchObject({ delivery: 'delivered' });
      expect(writes).toEqual(['pending', 'delivered']);
    });

    it('answers nothing and reads as before while that commit fails; the outcome recorded again answers', async () => {
      const { tracker, writes, startTurn, complete } = trackerHarness();
      const watch = tracker.watch(message.id);
      let answered = false;
      const waited = watch.wait(1000).finally(() => {
        answered = true;
      });
      startTurn();
      const failed = Promise.resolve(false);
      complete('completed', message, [{ text: 'hi' }], failed);
      await failed;
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      expect(answered).toBe(false);
      expect((await tracker.current(message.id))?.status).toBe('running');
      // The sender writes the settlement again and records the outcome again with it.
      complete('completed', message, [{ text: 'hi' }], Promise.resolve(true));
      expect((await waited)?.status).toMatchObject({ status: 'completed', replies: [{ text: 'hi' }] });
      expect(writes).toEqual(['completed', 'completed']);
    });
  });

  describe('when the outcome lands before `queued` (a pipeline faster than the accept)', () => {
    it('keeps the final status, answers the watch, and never writes queued over it', async () => {
      const { tracker, writes, reads, complete } = trackerHarness();
      const watch = tracker.watch(message.id);
      complete();
      // Let the final write land before the route gets to record `queued`.
      await new Promise((resolve) => setImmediate(resolve));
      tracker.queued(message.id, { pipeline: 'echo', rule: null, traceId: null });
      const final = await watch.wait(1000);
      expect(final?.status.status).toBe('completed');
      expect(reads).toEqual([]);
      expect((await tracker.current(message.id))?.status).toBe('completed');
      expect(writes).toEqual(['completed']);
    });
  });

  describe('when a watch ends before the final status is written', () => {
    it('keeps answering with that status until the write lands', async () => {
      const { tracker, store, statuses, complete } = trackerHarness();
      let land: () => void = () => {};
      const landed = new Promise<void>((resolve) => {
        land = resolve;
      });
      statuses.put = async (status) => {
        await landed;
        await store.put(status);
      };
      const watch = tracker.watch(message.id);
      complete('discarded');
      watch.cancel();
      expect((await tracker.current(message.id))?.status).toBe('discarded');
      expect(await store.get(message.id)).toBeNull();
      land();
      await new Promise((resolve) => setImmediate(resolve));
      expect((await store.get(message.id))?.status).toBe('discarded');
    });
  });

  describe('when a final message is no longer watched', () => {
    it('forgets it, and later answers and replies come from the store', async () => {
      const { tracker, store, reads, complete } = trackerHarness();
      const watch = tracker.watch(message.id);
      tracker.queued(message.id, { pipeline: 'echo', rule: null, traceId: null });
      complete('dead_lettered');
      await watch.wait(1000);
      expect((await tracker.current(message.id))?.status).toBe('dead_lettered');
      expect(reads).toEqual([message.id]);
      // The dead letter reply arrives after the final status was written and forgotten.
      const updated = await tracker.appendReplies(message.id, [{ text: 'sorry' }]);
      expect(updated?.replies).toEqual([{ text: 'sorry' }]);
      expect((await store.get(message.id))?.replies).toEqual([{ text: 'sorry' }]);
    });
  });

  describe('when another replica runs a message followed here (docs/design.md §5)', () => {
    it('shows it running, answers the watch with its replies, and leaves the write to that replica', async () => {
      const { tracker, writes, reads, relayed } = trackerHarness();
      const watch = tracker.watch(message.id);
      tracker.queued(message.id, { pipeline: 'echo', rule: null, traceId: null });
      relayed.startTurn();
      expect(await tracker.current(message.id)).toMatchObject({ status: 'running', turn: 't2' });
      relayed.complete(message, [{ text: 'from the other replica' }]);
      const final = await watch.wait(1000);
      expect(final?.status).toMatchObject({
        status: 'completed',
        turn: 't2',
        replies: [{ text: 'from the other replica' }],
      });
      expect(writes).toEqual([]);
      // The answer was looked up in the store (the other replica wrote it before relaying); once
      // answered the message is forgotten, and the status comes from the store again.
      expect(reads).toEqual([message.id]);
      await tracker.current(message.id);
      expect(reads).toEqual([message.id, message.id]);
    });

    it("answers a relayed dead letter with the replies the other replica's send stored", async () => {
      const { tracker, store, relayed } = trackerHarness();
      const watch = tracker.watch(message.id);
      tracker.queued(message.id, { pipeline: 'echo', rule: null, traceId: null });
      await store.put({
        id: message.id,
        channel: 'api',
        tenant: 'default',
        generation: 0,
        status: 'dead_lettered',
        pipeline: 'echo',
        rule: null,
        turn: 't2',
        replies: [{ text: 'sorry, that failed' }],
        delivery: null,
        error: 'SB_PIPELINE_FAILED: boom',
        trace_id: null,
        updated_at: 2,
      });
      relayed.complete(message, [], 'dead_lettered');
      const final = await watch.wait(1000);
      expect(final?.status).toMatchObject({
        status: 'dead_lettered',
        replies: [{ text: 'sorry, that failed' }],
      });
    });

    it('lets go of a followed message that the pool no longer holds and that has no stored status', async () => {
      let held = true;
      const { tracker, relayed } = trackerHarness(
        async () => (held ? { state: 'running', pipeline: 'echo', channel: 'api', rule: null } : null),
        {
          sweepEveryMs: 10,
          staleAfterMs: 0,
        },
      );
      tracker.queued(message.id, { pipeline: 'echo', rule: null, traceId: null });
      relayed.startTurn();
      expect(await tracker.current(message.id)).toMatchObject({ status: 'running' });
      held = false;
      await eventually(async () => (await tracker.current(message.id)) === null, 2000, 'the message let go');
      tracker.close();
    });

    it('reads the store when the relayed outcome never comes, and stops following the message', async () => {
      const { tracker, store, reads, relayed } = trackerHarness(async () => null);
      const watch = tracker.watch(message.id);
      tracker.queued(message.id, { pipeline: 'echo', rule: null, traceId: null });
      relayed.startTurn();
      const done = completedElsewhere;
      await store.put(done);
      // The relayed outcome is lost: the wait times out, and the answer comes from the store.
      expect(await watch.wait(20)).toBeNull();
      expect(await tracker.current(message.id)).toEqual(done);
      await new Promise((resolve) => setImmediate(resolve));
      reads.length = 0;
      expect(await tracker.current(message.id)).toEqual(done);
      expect(reads).toEqual([message.id]);
    });

    it('reads what the replica that ran it stored when that is further along (completed, delivery pending), never going back to running', async () => {
      const { tracker, store, writes, relayed } = trackerHarness(async () => ({
        state: 'settled',
        pipeline: 'echo',
        channel: 'api',
        rule: null,
      }));
      tracker.queued(message.id, { pipeline: 'echo', rule: null, traceId: null });
      relayed.startTurn();
      expect(await tracker.current(message.id)).toMatchObject({ status: 'running' });
      // The replica that ran the turn stored its replies: every other replica reads this.
      const pendingElsewhere: MessageStatus = { ...completedElsewhere, delivery: 'pending' };
      await store.put(pendingElsewhere);
      expect(await tracker.current(message.id)).toEqual(pendingElsewhere);
      // Its delivery ended there: final in the store, and here.
      await store.put(completedElsewhere);
      expect(await tracker.current(message.id)).toEqual(completedElsewhere);
      expect(writes).toEqual([]);
    });

    it('keeps what it knows when the store holds less (a stale queued status)', async () => {
      const { tracker, store, relayed } = trackerHarness(async () => ({
        state: 'running',
        pipeline: 'echo',
        channel: 'api',
        rule: null,
      }));
      tracker.queued(message.id, { pipeline: 'echo', rule: null, traceId: null });
      relayed.startTurn();
      await store.put({ ...completedElsewhere, status: 'queued', turn: null, replies: [] });
      expect(await tracker.current(message.id)).toMatchObject({ status: 'running', turn: 't2' });
    });
  });

  describe('when a request here waits on a message another replica accepted (a repeated keyed request)', () => {
    const done = completedElsewhere;

    it('answers it from the store once its final status is stored there, its outcome relayed to the other', async () => {
      const { tracker, store } = trackerHarness(async () => null, { checkElsewhereEveryMs: 10 });
      const watch = tracker.watchAccepted(message.id);
      const waited = watch.wait(2_000);
      await store.put({ ...done, status: 'running', replies: [] });
      await store.put(done);
      expect((await waited)?.status).toEqual(done);
      tracker.close();
    });

    it('reads no store for a message this replica follows: its events come here', async () => {
      vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
      try {
        const { tracker, reads, complete } = trackerHarness(async () => null, { checkElsewhereEveryMs: 10 });
        tracker.watch(message.id);
        tracker.queued(message.id, { pipeline: 'echo', rule: null, traceId: null });
        const waited = tracker.watchAccepted(message.id).wait(10_000);
        await vi.advanceTimersByTimeAsync(100);
        expect(reads).toEqual([]);
        complete();
        expect((await waited)?.status.status).toBe('completed');
        tracker.close();
      } finally {
        vi.useRealTimers();
      }
    });
  });

  describe('when another replica runs a message nobody follows here', () => {
    it('neither keeps it in memory nor writes a status for it', async () => {
      const { tracker, writes, reads, relayed } = trackerHarness();
      relayed.startTurn();
      relayed.complete();
      await new Promise((resolve) => setImmediate(resolve));
      expect(await tracker.current(message.id)).toBeNull();
      expect(reads).toEqual([message.id]);
      expect(writes).toEqual([]);
    });
  });

  describe('when this replica sends the answer of a message another replica follows', () => {
    it('leaves the replies to the final status the outcome writes, reading no store that may be away', async () => {
      const { tracker, store, statuses, reads, complete } = trackerHarness();
      const get = statuses.get;
      statuses.get = (id) => {
        reads.push(id);
        return Promise.reject(new Error('PostgreSQL is away'));
      };
      expect(await tracker.appendReplies(message.id, [{ text: 'hello' }], true)).toBeNull();
      // A dead-letter reply, which no outcome follows, is stored: it waits for the store.
      await expect(tracker.appendReplies(message.id, [{ text: 'sorry' }])).rejects.toThrow('away');
      statuses.get = get;
      // The delivery answered a merged burst: each message's outcome carries the replies.
      const second = { ...message, id: '01JSTATUS00000000000000002' };
      complete('completed', message, [{ text: 'hello' }]);
      complete('completed', second, [{ text: 'hello' }]);
      for (const id of [message.id, second.id]) {
        await eventually(async () => (await store.get(id))?.status === 'completed');
        expect(await store.get(id)).toMatchObject({ delivery: 'delivered', replies: [{ text: 'hello' }] });
      }
      // Only the dead-letter reply read the store.
      expect(reads).toEqual([message.id]);
    });
  });

  describe('when a dead letter carries its dead-letter reply (docs/design.md §5 "Outcomes kept with their settlement")', () => {
    const deadLetter = (replies: Reply[] = [{ text: 'sorry' }]): Outcome => ({
      kind: 'dead_lettered',
      reason: 'fatal_error',
      at: 1,
      message,
      session: 's',
      pipeline: 'echo',
      turnId: 't1',
      replies,
    });

    it('shows the reply once when its send, on a replica that does not follow the message, came before the final status', async () => {
      const settling = trackerHarness();
      // The sender's replica shares the store and follows nothing.
      const sending = createStatusTracker({
        channelId: 'api',
        statuses: settling.statuses,
        logger: silentLogger,
        events: { subscribeOutcomes: () => () => {}, subscribeTurnStarts: () => () => {} },
      });
      settling.tracker.queued(message.id, { pipeline: 'echo', rule: null, traceId: null });
      expect(await sending.appendReplies(message.id, [{ text: 'sorry' }])).toBeNull();
      settling.emitOutcome(deadLetter());
      await eventually(async () => (await settling.store.get(message.id))?.status === 'dead_lettered');
      const stored = await settling.store.get(message.id);
      expect(stored?.replies).toEqual([{ text: 'sorry' }]);
      // Sent again (a crash repeated the send): the status holds it already and is not written.
      const writes = settling.writes.length;
      expect((await sending.appendReplies(message.id, [{ text: 'sorry' }]))?.replies).toEqual([
        { text: 'sorry' },
      ]);
      expect(settling.writes).toHaveLength(writes);
      const after = await settling.store.get(message.id);
      expect(after?.replies).toEqual([{ text: 'sorry' }]);
      expect(statusVersion(after as MessageStatus)).toBe(statusVersion(stored as MessageStatus));
      sending.close();
    });

    it('writes the reply from the outcome alone, as a replica recovering a kept outcome does', async () => {
      const { tracker, store, emitOutcome } = trackerHarness();
      emitOutcome(deadLetter());
      await eventually(async () => (await store.get(message.id))?.status === 'dead_lettered');
      expect((await store.get(message.id))?.replies).toEqual([{ text: 'sorry' }]);
      expect((await tracker.appendReplies(message.id, [{ text: 'sorry' }]))?.replies).toEqual([
        { text: 'sorry' },
      ]);
    });

    it('shows the reply once when this replica sent it before the outcome was recorded', async () => {
      const { tracker, store, startTurn, emitOutcome } = trackerHarness();
      const watch = tracker.watch(message.id);
      tracker.queued(message.id, { pipeline: 'echo', rule: null, traceId: null });
      startTurn();
      await tracker.appendReplies(message.id, [{ text: 'sorry' }]);
      emitOutcome(deadLetter());
      const final = await watch.wait(1000);
      expect(final?.status.replies).toEqual([{ text: 'sorry' }]);
      await eventually(async () => (await store.get(message.id))?.status === 'dead_lettered');
      expect((await store.get(message.id))?.replies).toEqual([{ text: 'sorry' }]);
    });

    it('shows no replies of a delivery_failed dead letter, which were given up', async () => {
      const { store, emitOutcome } = trackerHarness();
      emitOutcome({ ...deadLetter([{ text: 'never sent' }]), reason: 'delivery_failed' });
      await eventually(async () => (await store.get(message.id))?.status === 'dead_lettered');
      expect((await store.get(message.id))?.replies).toEqual([]);
    });
  });

  describe("when asked about a message of another channel (an id from another prefix's answer)", () => {
    it('reads it as unknown, whether the store holds its status or the shared pool its turn', async () => {
      const other = { ...message, id: '01JSTATUS00000000000000009', channel: 'api-2' };
      const { tracker, store } = trackerHarness(async (id) =>
        id === other.id ? { state: 'running', pipeline: 'echo', channel: 'api-2', rule: null } : null,
      );
      // Running in the pool, another replica's: the pool names its channel.
      expect(await tracker.current(other.id)).toBeNull();
      await store.put({
        id: other.id,
        channel: 'api-2',
        tenant: 'default',
        generation: 0,
        status: 'completed',
        pipeline: 'echo',
        rule: null,
        turn: 't9',
        replies: [{ text: 'my secret answer' }],
        delivery: 'delivered',
        error: null,
        trace_id: null,
        updated_at: 1,
      });
      expect(await tracker.current(other.id)).toBeNull();
      // Nor does a send of this channel append to it.
      expect(await tracker.appendReplies(other.id, [{ text: 'sorry' }])).toBeNull();
      expect((await store.get(other.id))?.replies).toEqual([{ text: 'my secret answer' }]);
    });
  });

  describe("when a replayed dead letter's turn ends", () => {
    it("writes its final status one generation later, so that it replaces the first run's", async () => {
      const { tracker, store, complete } = trackerHarness();
      tracker.queued(message.id, { pipeline: 'echo', rule: null, traceId: null });
      complete('dead_lettered');
      await eventually(async () => (await store.get(message.id))?.status === 'dead_lettered');
      complete('completed', { ...message, generation: 1 }, [{ text: 'at last' }]);
      await eventually(async () => (await store.get(message.id))?.status === 'completed');
      expect(await store.get(message.id)).toMatchObject({
        channel: 'api',
        tenant: 'default',
        generation: 1,
        replies: [{ text: 'at last' }],
      });
    });

    it.each([
      { followed: 'accepted here', queued: true },
      { followed: 'watched here only', queued: false },
    ])(
      'reads the replay running on another replica, not the first run final in the store ($followed)',
      async ({ queued }) => {
        const { tracker, store, relayed } = trackerHarness(async () => ({
          state: 'running',
          pipeline: 'echo',
          channel: 'api',
          rule: null,
        }));
        const firstRun: MessageStatus = { ...completedElsewhere, status: 'dead_lettered', replies: [] };
        await store.put(firstRun);
        const replay = { ...message, generation: 1 };
        const watch = tracker.watch(message.id);
        if (queued)
          tracker.queued(message.id, { pipeline: 'echo', rule: null, traceId: null, generation: 1 });
        relayed.startTurn(replay);
        expect(await tracker.current(message.id)).toMatchObject({ status: 'running', generation: 1 });
        // Still followed: the replay's own outcome answers the watch.
        relayed.complete(replay, [{ text: 'at last' }]);
        expect((await watch.wait(1000))?.status).toMatchObject({ status: 'completed', generation: 1 });
      },
    );
  });

  describe('when a message comes back from the journal after a restart', () => {
    it('follows its stored status, or queued where none was stored, without writing either', async () => {
      const { tracker, store, writes } = trackerHarness();
      const stored = { ...message, id: '01JSTATUS00000000000000003' };
      await store.put({
        id: stored.id,
        channel: 'api',
        tenant: 'default',
        generation: 0,
        status: 'queued',
        pipeline: 'echo',
        rule: 'vip',
        turn: null,
        replies: [],
        delivery: null,
        error: null,
        trace_id: null,
        updated_at: 0,
      });
      await tracker.recovered(stored.id, { pipeline: 'echo', rule: 'vip', traceId: null });
      await tracker.recovered(message.id, { pipeline: 'echo', rule: null, traceId: null });
      expect(writes).toEqual([]);
      expect(await tracker.current(stored.id)).toMatchObject({
        status: 'queued',
        rule: 'vip',
        updated_at: 0,
      });
      expect((await tracker.current(message.id))?.status).toBe('queued');
      expect(await store.get(message.id)).toBeNull();
    });
  });

  describe('when several messages end in the same event-loop turn', () => {
    it('answers them together once the turn is over, not one by one', async () => {
      const { tracker, complete } = trackerHarness();
      const second = { ...message, id: '01JSTATUS00000000000000002' };
      const answered: string[] = [];
      const waiting = [message, second].map((each) =>
        tracker
          .watch(each.id)
          .wait(1000)
          .then((final) => answered.push(final?.status.id ?? 'timed out')),
      );
      complete('completed', message);
      complete('completed', second);
      for (let tick = 0; tick < 10; tick++) await Promise.resolve();
      expect(answered).toEqual([]);
      await new Promise((resolve) => setImmediate(resolve));
      await Promise.all(waiting);
      expect(answered).toEqual([message.id, second.id]);
    });
  });

  describe('when a watch times out before the outcome', () => {
    it('resolves null, and a later outcome still reaches the store', async () => {
      const { tracker, store, complete } = trackerHarness();
      const watch = tracker.watch(message.id);
      tracker.queued(message.id, { pipeline: 'echo', rule: null, traceId: null });
      expect(await watch.wait(5)).toBeNull();
      expect((await tracker.current(message.id))?.status).toBe('queued');
      complete();
      // The write is under way; it has landed once the event-loop turn is over.
      await new Promise((resolve) => setImmediate(resolve));
      expect((await store.get(message.id))?.status).toBe('completed');
    });
  });

  describe('when a message goes from queued to running to completed', () => {
    it('answers every state, but writes the store only when final (the journal holds it until then)', async () => {
      const { store, writes, tracker, startTurn, complete } = trackerHarness();
      tracker.queued(message.id, { pipeline: 'echo', rule: null, traceId: null });
      expect((await tracker.current(message.id))?.status).toBe('queued');
      startTurn();
      expect((await tracker.current(message.id))?.status).toBe('running');
      await tracker.appendReplies(message.id, [{ text: 'hello' }]);
      complete('completed', message, [{ text: 'hello' }]);
      const final = await tracker.current(message.id);
      expect(final).toMatchObject({ status: 'completed', turn: 't1', replies: [{ text: 'hello' }] });
      expect(writes).toEqual(['completed']);
      expect(await store.get(message.id)).toMatchObject({ status: 'completed' });
    });
  });

  describe('when the tracker drains (shutdown)', () => {
    it('ends a wait under way and a wait begun later at once, and still records the outcome', async () => {
      const { tracker, complete } = trackerHarness();
      const first = tracker.watch(message.id);
      tracker.queued(message.id, { pipeline: 'echo', rule: null, traceId: null });
      const waiting = first.wait(60_000);
      tracker.drain();
      expect(await waiting).toBeNull();

      const second = tracker.watch(message.id);
      expect(await second.wait(60_000)).toBeNull();
      complete();
      await new Promise((resolve) => setImmediate(resolve));
      expect((await tracker.current(message.id))?.status).toBe('completed');
    });
  });
});
