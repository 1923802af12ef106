import { describe, expect, it } from 'vitest';
import {
  HANDOFF,
  type HandoffSettings,
  type Outcome,
  createHandoffDesk,
  createMemoryHandoffStore,
  createMemoryQueryPool,
  createMemoryReplyOutbox,
  createOutcomeBus,
} from '../../src/index.js';
import { createHarness, queuedMessage, settle } from '../harness.js';

const SETTINGS: HandoffSettings = { idleTimeoutMs: 60_000, idleResume: 'bot', maxEntries: 50 };
const SESSION = 'test:c:person:42';

/** A desk over memory stores, on a clock the test moves. */
function deskOf(
  options: {
    maxPending?: number;
    settings?: Partial<HandoffSettings>;
    reroute?: { pipeline: string } | null;
  } = {},
) {
  const clock = { now: 1_000_000 };
  const store = createMemoryHandoffStore();
  const pool = createMemoryQueryPool({
    concurrency: { global: 5, perSession: 1 },
    limits: { maxPending: options.maxPending ?? 100, maxPendingPerSession: 100 },
    pipelines: [
      {
        id: 'p',
        maxConcurrency: 5,
        aggregation: { enabled: false, delayMs: 0, maxWaitMs: 0, maxMessages: 1 },
        busyMode: 'queue',
      },
    ],
  });
  const outbox = createMemoryReplyOutbox();
  const outcomes: Outcome[] = [];
  const bus = createOutcomeBus();
  bus.subscribe((outcome) => outcomes.push(outcome));
  const desk = createHandoffDesk({
    store,
    pool,
    outbox,
    outcomes: bus,
    settings: () => ({ ...SETTINGS, ...options.settings }),
    hasPipeline: (id) => id === 'p',
    reroute: () => (options.reroute === undefined ? { pipeline: 'p' } : options.reroute),
    now: () => clock.now,
  });
  /** A claimed-like turn of `texts` in the session, as the controller hands it to `holdTurn`. */
  const turnOf = (texts: string[], pipeline = 'p') => ({
    id: `t-${texts.join('-')}`,
    session: SESSION,
    pipeline,
    messages: texts.map((text) => ({ ...queuedMessage('42', text, { pipeline }), session: SESSION })),
    attempt: 1,
    lease: { token: 'x', expiresAt: null },
  });
  return { clock, store, pool, outbox, outcomes, desk, turnOf };
}

describe('HandoffDesk', () => {
  describe('when a turn is claimed', () => {
    it('runs it while its session is not in handoff, and holds it once it is', async () => {
      const { desk, store, turnOf } = deskOf();
      expect(await desk.holdTurn(turnOf(['a']))).toBe('run');
      await desk.begin(SESSION, { reason: 'r', by: 'operator:ann' });
      expect(await desk.holdTurn(turnOf(['b', 'c']))).toBe('held');
      expect(await store.get(SESSION)).toMatchObject({ held: 2, pipeline: 'p' });
    });

    it('begins the handoff for a turn routed to __handoff__, naming the rule', async () => {
      const { desk, store, turnOf } = deskOf();
      const turn = turnOf(['human please'], HANDOFF);
      const [first] = turn.messages;
      if (first !== undefined) first.rule = 'human';
      expect(await desk.holdTurn(turn)).toBe('held');
      expect(await store.get(SESSION)).toMatchObject({
        by: 'rule:human',
        reason: 'rule human',
        held: 1,
        pipeline: null,
      });
    });

    it('answers full past maxEntries, writing nothing', async () => {
      const { desk, store, turnOf } = deskOf({ settings: { maxEntries: 2 } });
      await desk.begin(SESSION, { reason: 'r', by: 'operator:ann' });
      expect(await desk.holdTurn(turnOf(['a', 'b', 'c']))).toBe('full');
      expect(await store.get(SESSION)).toMatchObject({ held: 0 });
    });
  });

  describe('when a handoff ends with resume: bot', () => {
    it('queues one message merging what was held, with the transcript, then ends it', async () => {
      const { desk, store, pool, turnOf } = deskOf();
      await desk.begin(SESSION, { reason: 'r', by: 'operator:ann' });
      await desk.holdTurn(turnOf(['one', 'two']));
      await desk.reply(SESSION, { operator: 'ann', text: 'hello' });
      const ended = await desk.end(SESSION, { resume: 'bot' });
      expect(ended).toMatchObject({ resumed: 'bot', held: 2 });
      expect(await store.get(SESSION)).toBeNull();
      const turn = await pool.claim();
      expect(turn?.messages.map((queued) => queued.message.text)).toEqual(['one\ntwo']);
      const resumed = turn?.messages[0]?.message;
      expect(resumed?.id).toBe(ended?.messageId);
      expect(resumed?.handoff?.transcript.map((entry) => [entry.from, entry.text])).toEqual([
        ['user', 'one'],
        ['user', 'two'],
        ['operator', 'hello'],
      ]);
      // The turn that resumes runs even if the handoff were still in force (a crash before the end).
      await desk.begin(SESSION, { reason: 'again', by: 'operator:ann' });
      expect(await desk.holdTurn(turn as NonNullable<typeof turn>)).toBe('run');
    });

    it('queues the merged message past the queue bound: the handoff has ended, refusing would lose it', async () => {
      const { desk, store, pool, turnOf } = deskOf({ maxPending: 1 });
      await pool.enqueue(queuedMessage('other', 'filler'));
      await desk.begin(SESSION, { reason: 'r', by: 'operator:ann' });
      await desk.holdTurn(turnOf(['one']));
      expect(await desk.end(SESSION, { resume: 'bot' })).toMatchObject({
        resumed: 'bot',
        messageId: expect.any(String),
      });
      expect(await store.get(SESSION)).toBeNull();
      expect((await pool.stats()).pending).toBe(2);
    });

    it('tells an operator when no pipeline would answer, and the handoff goes on', async () => {
      const { desk, store, pool, turnOf } = deskOf({ reroute: null });
      await desk.begin(SESSION, { reason: 'r', by: 'routing:default' });
      await desk.holdTurn(turnOf(['one'], HANDOFF));
      await expect(desk.end(SESSION, { resume: 'bot' })).rejects.toMatchObject({
        code: 'SB_HANDOFF_NO_PIPELINE',
      });
      expect(await store.get(SESSION)).toMatchObject({ held: 1 });
      // The idle sweep leaves them handled instead.
      expect(await desk.end(SESSION, { resume: 'bot', why: 'idle' })).toMatchObject({
        resumed: 'skip',
        messageId: null,
      });
      expect((await pool.stats()).pending).toBe(0);
    });

    it('queues every held message once the end that failed is tried again', async () => {
      const { desk, store, pool, turnOf } = deskOf();
      await desk.begin(SESSION, { reason: 'r', by: 'operator:ann' });
      await desk.holdTurn(turnOf(['one']));
      const end = store.end;
      store.end = async () => {
        throw new Error('store down');
      };
      await expect(desk.end(SESSION, { resume: 'bot' })).rejects.toThrow('store down');
      store.end = end;
      await desk.holdTurn(turnOf(['two']));
      await desk.end(SESSION, { resume: 'bot' });
      const turn = await pool.claim();
      expect(turn?.messages.map((queued) => queued.message.text)).toEqual(['one\ntwo']);
      expect((await pool.stats()).pending).toBe(0);
    });

    it('loses the resumed turn, and only it, when the enqueue after the end fails: the messages stay handed_off', async () => {
      const { desk, store, pool, turnOf } = deskOf();
      await desk.begin(SESSION, { reason: 'r', by: 'operator:ann' });
      expect(await desk.holdTurn(turnOf(['one']))).toBe('held');
      const enqueue = pool.enqueue;
      pool.enqueue = async () => {
        throw new Error('pool down');
      };
      // The one failure point left (docs/design.md §2 "Handoff"): the end landed, the turn did not.
      await expect(desk.end(SESSION, { resume: 'bot' })).rejects.toThrow('pool down');
      pool.enqueue = enqueue;
      expect(await store.get(SESSION)).toBeNull();
      expect(await desk.end(SESSION, { resume: 'bot' })).toBeNull();
      expect((await pool.stats()).pending).toBe(0);
    });

    it('queues nothing when an operator acted after the idle sweep saw the handoff', async () => {
      const { desk, store, pool, clock, turnOf } = deskOf();
      await desk.begin(SESSION, { reason: 'r', by: 'operator:ann' });
      await desk.holdTurn(turnOf(['one']));
      const seen = await store.get(SESSION);
      clock.now += 1000;
      await desk.reply(SESSION, { operator: 'ann', text: 'still here' });
      expect(await desk.end(SESSION, { resume: 'bot', activeAt: seen?.activeAt, why: 'idle' })).toBeNull();
      expect(await store.get(SESSION)).not.toBeNull();
      expect((await pool.stats()).pending).toBe(0);
    });

    it('queues the merged message once when two replicas end the same handoff', async () => {
      const { desk, pool, turnOf } = deskOf();
      await desk.begin(SESSION, { reason: 'r', by: 'operator:ann' });
      await desk.holdTurn(turnOf(['one']));
      const ends = await Promise.all([
        desk.end(SESSION, { resume: 'bot' }),
        desk.end(SESSION, { resume: 'bot' }),
      ]);
      expect(ends.filter((ended) => ended !== null)).toHaveLength(1);
      expect((await pool.stats()).pending).toBe(1);
    });
  });

  describe('when a handoff is idle', () => {
    it('ends it past idle_timeout without operator activity, and not before', async () => {
      const { desk, store, clock, pool, turnOf } = deskOf();
      await desk.begin(SESSION, { reason: 'r', by: 'operator:ann' });
      await desk.holdTurn(turnOf(['one']));
      clock.now += 59_000;
      await desk.reply(SESSION, { operator: 'ann', text: 'still here' });
      clock.now += 59_000;
      expect(await desk.endIdle()).toBe(0);
      clock.now += 2000;
      expect(await desk.endIdle()).toBe(1);
      expect(await store.get(SESSION)).toBeNull();
      expect((await pool.stats()).pending).toBe(1);
    });
  });

  describe('when an operator replies', () => {
    it("adds one delivery to the session's chat whose message is the operator's reply, and refuses without a handoff", async () => {
      const { desk, outbox, outcomes } = deskOf();
      await expect(desk.reply(SESSION, { operator: 'ann', text: 'x' })).rejects.toMatchObject({
        code: 'SB_HANDOFF_NOT_FOUND',
      });
      await desk.begin(SESSION, { reason: 'r', by: 'operator:ann' });
      const sent = await desk.reply(SESSION, { operator: 'ann', text: 'hi there', id: 'r-1' });
      await desk.reply(SESSION, { operator: 'ann', text: 'hi there', id: 'r-1' });
      const [delivery, ...rest] = await outbox.list('c');
      expect(rest).toEqual([]);
      expect(delivery).toMatchObject({
        id: sent.deliveryId,
        chat: SESSION,
        ownsOutcome: true,
        operator: 'ann',
        replies: [{ text: 'hi there' }],
        origin: { channel: 'c', chat: { type: 'person', id: '42' } },
      });
      expect(
        delivery?.messages.map((sent) => [sent.message.id, sent.message.sender.name, sent.message.text]),
      ).toEqual([['r-1', 'ann', 'hi there']]);
      // Its outcome is its delivery's, once sent.
      expect(outcomes).toEqual([]);
    });
  });
});

describe('HandoffDesk in a tenant', () => {
  it('stamps the session’s tenant on the operator’s reply and on the message that resumes the bot', async () => {
    const { desk, outbox, pool, turnOf } = deskOf();
    await desk.begin(SESSION, { reason: 'r', by: 'operator:ann' });
    const turn = turnOf(['one']);
    for (const queued of turn.messages) queued.message.tenant = 'acme';
    await desk.holdTurn(turn);
    await desk.reply(SESSION, { operator: 'ann', text: 'hello', id: 'r1' });
    const [delivery] = await outbox.list('c');
    expect(delivery?.messages.map((sent) => [sent.message.id, sent.message.tenant])).toEqual([
      ['r1', 'acme'],
    ]);
    await desk.end(SESSION, { resume: 'bot' });
    expect((await pool.claim())?.messages[0]?.message.tenant).toBe('acme');
  });
});

describe('HandoffDesk replies across sessions', () => {
  it('sends a reply id a caller reused in another session there too', async () => {
    const { desk, outbox } = deskOf();
    const other = 'test:c:person:43';
    await desk.begin(SESSION, { reason: 'r', by: 'operator:ann' });
    await desk.begin(other, { reason: 'r', by: 'operator:ann' });
    await desk.reply(SESSION, { operator: 'ann', text: 'to 42', id: 'same' });
    await desk.reply(other, { operator: 'ann', text: 'to 43', id: 'same' });
    expect((await outbox.list('c')).map((delivery) => delivery.replies[0]?.text)).toEqual(['to 42', 'to 43']);
  });
});

describe('controller with handoffs', () => {
  it('ends a turn whose handoff check failed and whose pipeline is gone, leaving nothing claimed', async () => {
    const harness = createHarness({
      handoffs: {
        holdTurn: async () => {
          throw new Error('store down');
        },
        begin: async () => {
          throw new Error('unused');
        },
      },
    });
    harness.controller.start();
    await harness.pool.enqueue(queuedMessage('42', 'orphan', { pipeline: 'removed' }));
    await settle(20);
    expect(harness.outcomes.map((outcome) => [outcome.kind, outcome.reason])).toEqual([
      ['dead_lettered', 'pipeline_removed'],
    ]);
    expect((await harness.pool.stats()).inflight).toBe(0);
    await harness.controller.stop({ drainTimeoutMs: 100 });
  });

  it('runs turns until the session is in handoff, then ends its messages handed_off without running the pipeline; a sent operator reply ends handed_off', async () => {
    const store = createMemoryHandoffStore();
    let desk: ReturnType<typeof createHandoffDesk> | undefined;
    const harness = createHarness({
      handoffs: {
        holdTurn: (turn) => (desk as NonNullable<typeof desk>).holdTurn(turn),
        begin: (session, start) => (desk as NonNullable<typeof desk>).begin(session, start),
      },
    });
    desk = createHandoffDesk({
      store,
      pool: harness.pool,
      outbox: harness.outbox,
      outcomes: { record: () => {} },
      settings: () => SETTINGS,
      hasPipeline: () => true,
      reroute: () => ({ pipeline: 'p' }),
    });
    harness.controller.start();
    await harness.send('42', 'escalate');
    await settle();
    harness.runs.splice(0, 1)[0]?.resolve([{ text: 'a person will answer' }]);
    await settle();

    await store.begin(SESSION, { reason: 'r', by: 'operator:ann', at: 1 });
    await harness.send('42', 'are you there');
    await settle(20);
    expect(harness.events).toEqual(['start:escalate', 'end:escalate']);
    expect(
      harness.outcomes
        .filter((outcome) => outcome.kind === 'handed_off')
        .map((outcome) => outcome.message.text),
    ).toEqual(['are you there']);
    expect(await store.get(SESSION)).toMatchObject({ held: 1 });

    await (desk as NonNullable<typeof desk>).reply(SESSION, { operator: 'ann', text: 'I am here' });
    await settle(20);
    expect(harness.delivered.map((sent) => sent.replies)).toEqual([
      [{ text: 'a person will answer' }],
      [{ text: 'I am here' }],
    ]);
    expect(
      harness.outcomes
        .filter((outcome) => outcome.reason === 'operator_reply')
        .map((outcome) => [outcome.kind, outcome.message.text]),
    ).toEqual([['handed_off', 'I am here']]);
    await harness.controller.stop({ drainTimeoutMs: 100 });
  });
});
