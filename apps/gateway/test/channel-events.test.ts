import {
  type Delivery,
  type Outcome,
  type QueryPool,
  type TurnStart,
  createMemoryReplicaEvents,
  createOutcomeBus,
  parseInboundMessage,
} from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { fanOutChannelEvents } from '../src/channel-events.js';

const messageOf = (channel: string, acceptedBy?: string) =>
  parseInboundMessage({
    id: `m-${channel}`,
    ...(acceptedBy === undefined ? {} : { accepted_by: acceptedBy }),
    platform: 'openapi',
    channel,
    chat: { type: 'person', id: 's1' },
    sender: { id: 'u1' },
    text: 'hi',
    platform_message_id: '1',
    received_at: 0,
  });

/**
 * A fan-out over a real outcome bus; `recorded`: the outcomes the bus counts as recorded,
 * `reported`: the listener errors the fan-out reports.
 */
function fanOutOverBus() {
  const recorded: string[] = [];
  const reported: unknown[] = [];
  const bus = createOutcomeBus(undefined, undefined, (outcome) => recorded.push(outcome.message.id));
  const fanOut = fanOutChannelEvents({
    outcomes: bus,
    replicas: null,
    pool: {} as QueryPool,
    recordsShareOutboxCommit: false,
    onListenerError: (error) => reported.push(error),
  });
  return { bus, fanOut, recorded, reported };
}

describe('channel event fan-out', () => {
  it('calls the listeners of an event’s channels only, each once, and those of every channel', async () => {
    const { bus, fanOut, recorded } = fanOutOverBus();
    const heard: string[] = [];
    for (const channel of ['a', 'b', undefined]) {
      const name = channel ?? 'all';
      fanOut.events.subscribeOutcomes((outcome) => {
        heard.push(`${name}: outcome ${outcome.message.channel}`);
        return Promise.resolve(true);
      }, channel);
      fanOut.events.subscribeTurnStarts((turn) => heard.push(`${name}: turn ${turn.id}`), channel);
      fanOut.events.subscribeRepliesStored?.(
        (delivery) => heard.push(`${name}: replies ${delivery.id}`),
        channel,
      );
    }

    bus.record({ kind: 'dropped', reason: 'quota', at: 0, message: messageOf('a'), session: 's' } as Outcome);
    fanOut.turnStarted({
      id: 't1',
      pipeline: 'p',
      messages: [{ message: messageOf('b') }, { message: messageOf('b') }],
    } as TurnStart);
    fanOut.repliesStored({ id: 'd1', channel: 'a' } as Delivery);
    expect(heard).toEqual([
      'a: outcome a',
      'all: outcome a',
      'b: turn t1',
      'all: turn t1',
      'a: replies d1',
      'all: replies d1',
    ]);
    // The writes of the outcome's listeners, combined, count it as recorded.
    await new Promise((resolve) => setImmediate(resolve));
    expect(recorded).toEqual(['m-a']);
  });

  it('reports a listener that throws and still waits for the others’ writes; a second unsubscribe drops nothing', async () => {
    const { bus, fanOut, recorded, reported } = fanOutOverBus();
    const first = fanOut.events.subscribeOutcomes(() => Promise.resolve(true), 'a');
    first();
    let release: (landed: boolean) => void = () => {};
    const write = new Promise<boolean>((resolve) => {
      release = resolve;
    });
    fanOut.events.subscribeOutcomes(() => write, 'a');
    fanOut.events.subscribeOutcomes(() => {
      throw new Error('broken listener');
    }, 'a');
    // The first listener's stop called again must not drop the channel's later listeners.
    first();

    bus.record({ kind: 'dropped', reason: 'quota', at: 0, message: messageOf('a'), session: 's' } as Outcome);
    expect(reported).toEqual([new Error('broken listener')]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(recorded).toEqual([]);
    release(true);
    await new Promise((resolve) => setImmediate(resolve));
    expect(recorded).toEqual(['m-a']);
  });

  describe('when replicas share the pool', () => {
    it('relays a turn start once to each other replica that accepted one of its messages, an outcome to the one that accepted it', async () => {
      const here = createMemoryReplicaEvents();
      const [b, c] = [here.peer(), here.peer()];
      const heard: string[] = [];
      for (const replica of [here, b, c]) {
        replica.subscribeTurnStarts((turn) => heard.push(`${replica.replicaId}: turn ${turn.id}`));
        replica.subscribeOutcomes((outcome) => heard.push(`${replica.replicaId}: outcome ${outcome.turnId}`));
      }
      const fanOut = fanOutChannelEvents({
        outcomes: createOutcomeBus(),
        replicas: here,
        pool: {} as QueryPool,
        recordsShareOutboxCommit: false,
        onListenerError: () => {},
      });
      expect(fanOut.events.replicaId).toBe(here.replicaId);

      fanOut.turnStarted({
        id: 't1',
        pipeline: 'p',
        messages: [
          { message: messageOf('http', b.replicaId) },
          { message: messageOf('http', here.replicaId) },
          { message: messageOf('http', c.replicaId) },
          { message: messageOf('http', b.replicaId) },
          { message: messageOf('telegram') },
        ],
      } as TurnStart);
      // Followed by this replica only, or by none: nothing crosses.
      fanOut.turnStarted({
        id: 't2',
        pipeline: 'p',
        messages: [{ message: messageOf('http', here.replicaId) }],
      });
      fanOut.turnStarted({ id: 't3', pipeline: 'p', messages: [{ message: messageOf('telegram') }] });
      const outcomeOf = (turnId: string, acceptedBy?: string) =>
        ({
          kind: 'completed',
          at: 0,
          turnId,
          message: messageOf('http', acceptedBy),
          session: 's',
        }) as Outcome;
      fanOut.events.shareOutcome?.(outcomeOf('t1', c.replicaId));
      fanOut.events.shareOutcome?.(outcomeOf('t2', here.replicaId));
      fanOut.events.shareOutcome?.(outcomeOf('t3'));
      await new Promise((resolve) => setImmediate(resolve));
      expect(heard.sort()).toEqual(
        [`${b.replicaId}: turn t1`, `${c.replicaId}: turn t1`, `${c.replicaId}: outcome t1`].sort(),
      );
    });
  });
});
