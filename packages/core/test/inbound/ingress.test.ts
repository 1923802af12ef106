import { describe, expect, it } from 'vitest';
import {
  type IngressOptions,
  type IngressRefusal,
  type MessageTracer,
  type Outcome,
  type PipelinePolicyInput,
  PipelinePolicySchema,
  createIngress,
  createMemoryQueryPool,
  createOutcomeBus,
  createRouter,
} from '../../src/index.js';
import { message } from '../harness.js';

function setup(
  options: {
    maxPending?: number;
    maxPendingPerSession?: number;
    pipelines?: PipelinePolicyInput[];
    refuseWhen?: IngressOptions['refuseWhen'];
    tracer?: IngressOptions['tracer'];
    tenantOf?: IngressOptions['tenantOf'];
  } = {},
) {
  const policies = (options.pipelines ?? [{ id: 'echo' }]).map((p) => PipelinePolicySchema.parse(p));
  const pool = createMemoryQueryPool({
    concurrency: { global: 1, perSession: 1 },
    limits: {
      maxPending: options.maxPending ?? 100,
      maxPendingPerSession: options.maxPendingPerSession ?? 100,
    },
    pipelines: policies,
  });
  const router = createRouter(
    {
      default: 'echo',
      rules: [
        {
          name: 'drop-ads',
          type: 'message_content',
          operator: 'contains',
          value: 'buy now',
          pipeline: '__discard__',
        },
        { name: 'vip-group', type: 'launcher_id', operator: 'eq', value: 'vip', pipeline: 'echo' },
      ],
    },
    { pipelines: policies.map((p) => p.id) },
  );
  const outcomes: Outcome[] = [];
  const bus = createOutcomeBus();
  bus.subscribe((o) => outcomes.push(o));
  const ingress = createIngress({
    pool,
    router: () => router,
    outcomes: bus,
    channelPolicy: () => ({ admission: { require_mention: true, prefixes: ['!'] }, sessionScope: 'chat' }),
    refuseWhen: options.refuseWhen,
    tracer: options.tracer,
    tenantOf: options.tenantOf,
  });
  return { pool, ingress, outcomes };
}

describe('ingress', () => {
  describe('when channels belong to tenants', () => {
    const tenantOf = (channel: string) => (channel === 'c' ? 'acme' : undefined);

    it('stamps the channel’s tenant on the queued message and on its outcomes', async () => {
      const { ingress, pool, outcomes } = setup({ tenantOf });
      await ingress.accept(message('A', 'hello'));
      await ingress.accept(message('A', 'buy now'));
      const claimed = await pool.claim();
      expect(claimed?.messages.map((queued) => queued.message.tenant)).toEqual(['acme']);
      expect(outcomes.map((outcome) => [outcome.kind, outcome.message.tenant])).toEqual([
        ['discarded', 'acme'],
      ]);
    });

    it('replaces a tenant the channel put on the message with its own, and clears it for default', async () => {
      const { ingress, pool } = setup({ tenantOf: () => undefined });
      await ingress.accept({ ...message('A', 'hello'), tenant: 'acme' });
      const claimed = await pool.claim();
      expect(claimed?.messages[0]?.message).not.toHaveProperty('tenant');
    });
  });

  describe('when a message is routed to a pipeline', () => {
    it('queues it under its session key and records no outcome yet', async () => {
      const { ingress, pool, outcomes } = setup();
      const result = await ingress.accept(message('A', 'hello'));
      expect(result).toEqual({ status: 'queued', pipeline: 'echo', session: 'test:c:person:A', rule: null });
      expect((await pool.stats()).pending).toBe(1);
      expect(outcomes).toEqual([]);
    });
  });

  describe('when a rule routes it to __discard__', () => {
    it('records a discarded outcome with the rule name and queues nothing', async () => {
      const { ingress, pool, outcomes } = setup();
      expect(await ingress.accept(message('A', 'BUY NOW? buy now!'))).toEqual({
        status: 'discarded',
        rule: 'drop-ads',
      });
      expect(outcomes).toMatchObject([{ kind: 'discarded', reason: 'rule', rule: 'drop-ads' }]);
      expect((await pool.stats()).pending).toBe(0);
    });
  });

  describe('when a group message does not mention the bot', () => {
    it('is ignored as not_mentioned unless a rule routes it or a prefix starts it', async () => {
      const { ingress, outcomes } = setup();
      expect(await ingress.accept(message('G', 'chatter', { chatType: 'group' }))).toEqual({
        status: 'ignored',
        reason: 'not_mentioned',
      });
      expect(outcomes).toMatchObject([{ kind: 'ignored', reason: 'not_mentioned' }]);
      expect((await ingress.accept(message('vip', 'chatter', { chatType: 'group' }))).status).toBe('queued');
      expect((await ingress.accept(message('G', '!ask', { chatType: 'group' }))).status).toBe('queued');
    });
  });

  describe('when a message reports an event no rule routes', () => {
    it('is ignored as unrouted_event and queues nothing, before admission judges it', async () => {
      const { ingress, pool, outcomes } = setup();
      const edit = message('G', 'chatter, edited', { chatType: 'group' });
      edit.event = { type: 'edited', message_id: 'm-1' };
      expect(await ingress.accept(edit, 'update-2')).toEqual({ status: 'ignored', reason: 'unrouted_event' });
      expect(outcomes).toMatchObject([{ kind: 'ignored', reason: 'unrouted_event' }]);
      expect((await pool.stats()).pending).toBe(0);
    });
  });

  describe('when a bot sends a message', () => {
    it('is ignored as bot_author', async () => {
      const { ingress } = setup();
      const fromBot = message('A', 'beep');
      fromBot.sender.is_bot = true;
      expect(await ingress.accept(fromBot)).toEqual({ status: 'ignored', reason: 'bot_author' });
    });
  });

  describe('when the platform redelivers an event', () => {
    it('records the second delivery as duplicate and queues once', async () => {
      const { ingress, pool, outcomes } = setup();
      expect((await ingress.accept(message('A', 'x'), 'update-1')).status).toBe('queued');
      expect(await ingress.accept(message('A', 'x'), 'update-1')).toEqual({ status: 'duplicate' });
      expect(outcomes).toMatchObject([{ kind: 'duplicate', reason: 'redelivery' }]);
      expect((await pool.stats()).pending).toBe(1);
    });

    it('accepts a redelivery of a message that was refused', async () => {
      const { ingress, pool } = setup({ maxPending: 1 });
      await ingress.accept(message('A', 'fills the queue'));
      expect(await ingress.accept(message('B', 'x'), 'update-2')).toMatchObject({
        status: 'refused',
        reason: 'queue_full',
      });
      await pool.claim();
      // The refused delivery id was never marked: the redelivery is judged again, not called a duplicate.
      expect((await ingress.accept(message('B', 'x'), 'update-2')).status).toBe('queued');
    });

    it('queues one of two concurrent deliveries of one id and calls the other a duplicate', async () => {
      const { ingress, pool, outcomes } = setup();
      const results = await Promise.all([
        ingress.accept(message('A', 'x'), 'update-4'),
        ingress.accept(message('A', 'x'), 'update-4'),
      ]);
      expect(results.map((result) => result.status).sort()).toEqual(['duplicate', 'queued']);
      expect(outcomes).toMatchObject([{ kind: 'duplicate', reason: 'redelivery' }]);
      expect((await pool.stats()).pending).toBe(1);
    });
  });

  describe('when a channel gives up on a message its platform will not redeliver', () => {
    it('records it as dropped with the reason, its session and the error', () => {
      const { ingress, outcomes } = setup();
      const refused = message('A', 'refused until stop');
      const failed = message('B', 'store down');
      ingress.drop(refused, 'refused');
      ingress.drop(failed, 'ingress_failed', new Error('disk full'));
      expect(outcomes).toEqual([
        expect.objectContaining({
          kind: 'dropped',
          reason: 'refused',
          message: refused,
          session: 'test:c:person:A',
        }),
        expect.objectContaining({
          kind: 'dropped',
          reason: 'ingress_failed',
          message: failed,
          session: 'test:c:person:B',
          error: { code: 'SB_STORE_UNAVAILABLE', message: 'disk full' },
        }),
      ]);
      expect(outcomes[0]).not.toHaveProperty('error');
    });

    it('records what admission or routing would have decided instead, not a drop', () => {
      const { ingress, outcomes } = setup();
      const fromBot = message('A', 'beep');
      fromBot.sender.is_bot = true;
      ingress.drop(fromBot, 'refused');
      ingress.drop(message('B', 'buy now'), 'refused');
      expect(outcomes).toMatchObject([
        { kind: 'ignored', reason: 'bot_author' },
        { kind: 'discarded', reason: 'rule', rule: 'drop-ads' },
      ]);
    });
  });

  describe('when the platform will not deliver a message again (its last try)', () => {
    it('keeps it past max_pending, and still calls an earlier try that was journaled a duplicate', async () => {
      const { ingress, pool, outcomes } = setup({ maxPending: 1 });
      expect((await ingress.accept(message('A', 'x'), 'update-7')).status).toBe('queued');
      expect(await ingress.accept(message('B', 'y'), 'update-8')).toMatchObject({ status: 'refused' });
      expect((await ingress.accept(message('B', 'y'), 'update-8', { last: true })).status).toBe('queued');
      expect(await ingress.accept(message('A', 'x'), 'update-7', { last: true })).toEqual({
        status: 'duplicate',
      });
      expect((await pool.stats()).pending).toBe(2);
      expect(outcomes).toMatchObject([{ kind: 'duplicate', reason: 'redelivery' }]);
    });
  });

  describe('when a session overflows', () => {
    it('records the dropped oldest message as dropped/queue_overflow', async () => {
      const { ingress, outcomes } = setup({ maxPendingPerSession: 1 });
      const first = message('A', 'first');
      await ingress.accept(first);
      await ingress.accept(message('A', 'second'));
      expect(outcomes).toMatchObject([
        { kind: 'dropped', reason: 'queue_overflow', message: { id: first.id } },
      ]);
    });
  });

  describe('when the refusal check answers (the audit outbox is full)', () => {
    it('throws SB_STORE_UNAVAILABLE with its retryAfterMs, enqueues nothing and records nothing', async () => {
      let refusal: IngressRefusal | undefined = { reason: 'audit outbox is full', retryAfterMs: 5000 };
      const { ingress, pool, outcomes } = setup({ refuseWhen: () => refusal });
      await expect(ingress.accept(message('A', 'hello'), 'delivery-1')).rejects.toMatchObject({
        code: 'SB_STORE_UNAVAILABLE',
        message: 'audit outbox is full',
        retryAfterMs: 5000,
      });
      await expect(ingress.accept(message('A', 'buy now'))).rejects.toMatchObject({
        code: 'SB_STORE_UNAVAILABLE',
      });
      expect((await pool.stats()).pending).toBe(0);
      expect(outcomes).toEqual([]);

      refusal = undefined;
      expect(await ingress.accept(message('A', 'hello'), 'delivery-1')).toMatchObject({ status: 'queued' });
      expect((await pool.stats()).pending).toBe(1);
    });
  });

  describe('when a traced message is refused and its channel offers it again', () => {
    it("gives it back the caller's trace context, so the retry's receive span is not a child of the refused one", async () => {
      const CALLER = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      const seen: Array<string | undefined> = [];
      // Each receive records the context it continues and puts its own span's in its place.
      const tracer = {
        receive(received: { traceparent?: string }) {
          seen.push(received.traceparent);
          received.traceparent = `00-4bf92f3577b34da6a3ce929d0e0e4736-${String(seen.length).padStart(16, '0')}-01`;
          return {};
        },
        route: (_span: unknown, _message: unknown, decide: () => unknown) => decide(),
        received() {},
      } as unknown as MessageTracer;
      const { ingress } = setup({ maxPending: 1, tracer });
      expect(await ingress.accept(message('A', 'first'))).toMatchObject({ status: 'queued' });
      const offered = { ...message('B', 'second'), traceparent: CALLER };
      expect(await ingress.accept(offered)).toMatchObject({ status: 'refused' });
      expect(await ingress.accept(offered)).toMatchObject({ status: 'refused' });
      expect(seen.slice(1)).toEqual([CALLER, CALLER]);
      expect(offered.traceparent).toBe(CALLER);
    });
  });
});
