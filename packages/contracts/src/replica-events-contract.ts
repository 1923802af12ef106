import { describe, expect, it, vi } from 'vitest';
import type { Outcome, ReplicaEvents, SessionReplies, TurnStart } from '@switchboard/core';
import { type StoreFactory, queuedMessageFixture, useStoreUnderTest } from './store-harness.js';

/** How long an event may take to reach another replica (real time: pub/sub crosses a server). */
const WITHIN_MS = 5000;
const until = (check: () => void) => vi.waitFor(check, { timeout: WITHIN_MS, interval: 10 });

function outcomeOf(sequence: number): Outcome {
  const { message } = queuedMessageFixture(sequence);
  return {
    kind: 'completed',
    at: Date.UTC(2025, 0, 1),
    message,
    session: `s-${sequence}`,
    pipeline: 'p',
    turnId: `turn-${sequence}`,
    replies: [{ text: `reply ${sequence}` }],
  };
}

const turnStart: TurnStart = {
  id: 'turn-1',
  pipeline: 'p',
  messages: [
    { message: { id: 'm-1', channel: 'http' }, rule: 'r' },
    // A dead letter's replay: its generation crosses too.
    { message: { id: 'm-2', channel: 'http', generation: 1 } },
  ],
};

const repliesTo = (session: string, text: string, channel = 'http'): SessionReplies => ({
  channel,
  session,
  messageId: `m-${text}`,
  turn: 't-1',
  replies: [{ text }],
});

/** The replies a follower heard, in order, by their text. */
const textsOf = (heard: readonly SessionReplies[]) => heard.map((replies) => replies.replies[0]?.text);

/**
 * The behaviour every `ReplicaEvents` must show (ports/replica-events.ts); run it once per
 * implementation. The factory's harness must offer `peer()`: each peer is another replica on the
 * same events.
 */
export function replicaEventsContract(name: string, factory: StoreFactory<ReplicaEvents>): void {
  describe(`ReplicaEvents contract: ${name}`, () => {
    const subject = useStoreUnderTest(factory);

    /** Another replica on the suite's events. */
    async function peer(): Promise<ReplicaEvents> {
      const other = await subject.peer();
      if (other === null) throw new Error('the ReplicaEvents contract needs peer() in its harness');
      return other;
    }

    /** Records what `replica` hears of outcomes and turn starts. */
    function listen(replica: ReplicaEvents) {
      const outcomes: Outcome[] = [];
      const turnStarts: TurnStart[] = [];
      replica.subscribeOutcomes((outcome) => outcomes.push(outcome));
      replica.subscribeTurnStarts((turn) => turnStarts.push(turn));
      return { outcomes, turnStarts };
    }

    /**
     * Follows `session` on `follower` until the returned stop, and returns once `publisher`'s
     * replies reach it (following may take effect later). The probes it published are left out of
     * what it heard.
     */
    async function follow(
      follower: ReplicaEvents,
      publisher: ReplicaEvents,
      session: string,
      channel = 'http',
    ) {
      const all: SessionReplies[] = [];
      const stop = follower.followSession(channel, session, (replies) => all.push(replies));
      await until(() => {
        if (!all.some((replies) => replies.messageId === 'm-probe'))
          publisher.publishReplies(repliesTo(session, 'probe', channel));
        expect(all.length).toBeGreaterThan(0);
      });
      return { heard: () => all.filter((replies) => replies.messageId !== 'm-probe'), stop };
    }

    describe('when replicas share events', () => {
      it('hands an outcome or a turn start to the replica it is addressed to only', async () => {
        const [a, b, c] = [subject.store, await peer(), await peer()];
        const heardByA = listen(a);
        const heardByB = listen(b);
        const heardByC = listen(c);

        // From one replica, in order: once c hears what a sent it after b's, it would have heard
        // b's before, had it been handed over to it too.
        a.publishOutcome(b.replicaId, outcomeOf(1));
        a.publishOutcome(c.replicaId, outcomeOf(2));
        await until(() => expect(heardByC.outcomes).toHaveLength(1));
        // A whole turn: only its id, pipeline and each message's id, channel and rule cross.
        a.publishTurnStart(b.replicaId, { ...turnStart, session: 'not relayed', attempt: 1 } as TurnStart);
        a.publishOutcome(c.replicaId, outcomeOf(3));
        await until(() => expect(heardByC.outcomes).toHaveLength(2));
        await until(() => expect(heardByB.turnStarts).toHaveLength(1));

        expect(heardByB.outcomes).toEqual([outcomeOf(1)]);
        expect(heardByB.turnStarts).toEqual([turnStart]);
        expect(heardByC.outcomes).toEqual([outcomeOf(2), outcomeOf(3)]);
        expect(heardByC.turnStarts).toEqual([]);
        expect(heardByA).toEqual({ outcomes: [], turnStarts: [] });
      });

      it('hands nothing to a replica of the events it addressed to itself', async () => {
        const [a, b] = [subject.store, await peer()];
        const heardByA = listen(a);
        const heardByB = listen(b);
        a.publishOutcome(a.replicaId, outcomeOf(1));
        a.publishTurnStart(a.replicaId, turnStart);
        // a's own events went out before the event b hears, and b's reply after: a would have
        // heard its own before b's.
        a.publishOutcome(b.replicaId, outcomeOf(2));
        await until(() => expect(heardByB.outcomes).toHaveLength(1));
        b.publishOutcome(a.replicaId, outcomeOf(3));
        await until(() => expect(heardByA.outcomes).toHaveLength(1));
        expect(heardByA).toEqual({ outcomes: [outcomeOf(3)], turnStarts: [] });
        expect(heardByB).toEqual({ outcomes: [outcomeOf(2)], turnStarts: [] });
      });

      it('hands over the events of one replica in the order it published them', async () => {
        const [a, b] = [subject.store, await peer()];
        const heard = listen(b);
        for (let sequence = 1; sequence <= 5; sequence += 1)
          a.publishOutcome(b.replicaId, outcomeOf(sequence));
        await until(() => expect(heard.outcomes).toHaveLength(5));
        expect(heard.outcomes.map((outcome) => outcome.turnId)).toEqual(
          [1, 2, 3, 4, 5].map((n) => `turn-${n}`),
        );
      });

      it('hands an event to each listener of its replica', async () => {
        const [a, b] = [subject.store, await peer()];
        const first = listen(b);
        const second = listen(b);
        a.publishOutcome(b.replicaId, outcomeOf(1));
        await until(() => {
          for (const heard of [first, second]) expect(heard.outcomes).toEqual([outcomeOf(1)]);
        });
      });

      it('stops calling a listener once it unsubscribed', async () => {
        const [a, b] = [subject.store, await peer()];
        const dropped: unknown[] = [];
        const stopOutcomes = b.subscribeOutcomes((outcome) => dropped.push(outcome));
        const stopTurnStarts = b.subscribeTurnStarts((turn) => dropped.push(turn));
        const kept = listen(b);
        stopOutcomes();
        stopTurnStarts();
        a.publishOutcome(b.replicaId, outcomeOf(1));
        a.publishTurnStart(b.replicaId, turnStart);
        await until(() => expect(kept.turnStarts).toHaveLength(1));
        expect(kept.outcomes).toHaveLength(1);
        expect(dropped).toEqual([]);
      });

      it('keeps handing an event to the other listeners when one throws', async () => {
        const [a, b] = [subject.store, await peer()];
        b.subscribeOutcomes(() => {
          throw new Error('listener failed');
        });
        const heard = listen(b);
        a.publishOutcome(b.replicaId, outcomeOf(1));
        a.publishOutcome(b.replicaId, outcomeOf(2));
        await until(() => expect(heard.outcomes).toEqual([outcomeOf(1), outcomeOf(2)]));
      });
    });

    describe('when replicas follow a session', () => {
      it('hands the replies sent to it to the replicas following it, never to the sender', async () => {
        const [a, b, c] = [subject.store, await peer(), await peer()];
        const byA = await follow(a, b, 's-1');
        const byC = await follow(c, b, 's-1');
        const byB = await follow(b, a, 's-2');

        // Once c heard a's own replies, a would have heard them too before b's that follow.
        a.publishReplies(repliesTo('s-1', 'own echo'));
        await until(() => expect(textsOf(byC.heard())).toEqual(['own echo']));
        b.publishReplies(repliesTo('s-1', 'one'));
        await until(() => expect(byA.heard()).toHaveLength(1));

        expect(byA.heard()).toEqual([repliesTo('s-1', 'one')]);
        expect(textsOf(byC.heard())).toEqual(['own echo', 'one']);
        expect(byB.heard()).toEqual([]);
      });

      it('keeps sessions and channels apart', async () => {
        const [a, b] = [subject.store, await peer()];
        const http = await follow(a, b, 's-1', 'http');
        const api = await follow(a, b, 's-1', 'api');
        const other = await follow(a, b, 's-2', 'http');
        b.publishReplies(repliesTo('s-1', 'to http'));
        b.publishReplies(repliesTo('s-1', 'to api', 'api'));
        b.publishReplies(repliesTo('s-2', 'to s-2'));
        await until(() => expect(other.heard()).toHaveLength(1));
        expect(textsOf(http.heard())).toEqual(['to http']);
        expect(textsOf(api.heard())).toEqual(['to api']);
        expect(textsOf(other.heard())).toEqual(['to s-2']);
      });

      it('hands over nothing once following stopped, to that listener only', async () => {
        const [a, b] = [subject.store, await peer()];
        const stopped = await follow(a, b, 's-1');
        const still = await follow(a, b, 's-1');
        const marker = await follow(a, b, 's-3');
        stopped.stop();
        b.publishReplies(repliesTo('s-1', 'after one stopped'));
        await until(() => expect(textsOf(still.heard())).toEqual(['after one stopped']));
        expect(stopped.heard()).toEqual([]);

        still.stop();
        // From one replica, in order: once a hears the marker, it would have heard the one before.
        b.publishReplies(repliesTo('s-1', 'after both stopped'));
        b.publishReplies(repliesTo('s-3', 'marker'));
        await until(() => expect(textsOf(marker.heard())).toEqual(['marker']));
        expect(stopped.heard()).toEqual([]);
        expect(textsOf(still.heard())).toEqual(['after one stopped']);
      });
    });
  });
}
