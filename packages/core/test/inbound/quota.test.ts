import { describe, expect, it } from 'vitest';
import {
  type InboundMessage,
  type Outcome,
  PipelinePolicySchema,
  type Quota,
  type TenantQuotas,
  createIngress,
  createMemoryQueryPool,
  createMemoryRateBuckets,
  createOutcomeBus,
  createQuotaCheck,
  createRouter,
  sessionKeyOf,
} from '../../src/index.js';
import { message } from '../harness.js';

const MINUTE = 60_000;

/** A quota check over memory buckets on a clock the test moves; `quotas` for the tenant acme. */
function setup(quotas: Quota[], reply?: string) {
  let nowMs = Date.UTC(2025, 0, 1);
  const own: TenantQuotas = { quotas, reply };
  const check = createQuotaCheck({
    buckets: createMemoryRateBuckets({ now: () => nowMs }),
    quotasOf: (tenant) => (tenant === 'acme' ? own : undefined),
  });
  const take = (inbound: InboundMessage, notify = false) =>
    check.take(inbound, sessionKeyOf(inbound), notify);
  return {
    take,
    advance(ms: number) {
      nowMs += ms;
    },
  };
}

/** `message(chat, text)` of tenant acme, from `sender`. */
function acme(chat: string, sender = `user-${chat}`): InboundMessage {
  return { ...message(chat, 'hi', { sender }), tenant: 'acme' };
}

describe('quota check', () => {
  describe('when a sender quota is used up', () => {
    it('refuses that sender until a token is back, and lets other senders through', async () => {
      const quotas = setup([{ scope: 'sender', limit: 2, perMs: MINUTE }]);
      expect(await quotas.take(acme('g', 'ann'))).toMatchObject({ allowed: true });
      expect(await quotas.take(acme('g2', 'ann'))).toMatchObject({ allowed: true });
      // Another chat, the same sender: still hers.
      expect(await quotas.take(acme('g3', 'ann'))).toEqual({ allowed: false, retryAfterMs: 30_000 });
      expect(await quotas.take(acme('g', 'bob'))).toMatchObject({ allowed: true });
      quotas.advance(30_000);
      expect(await quotas.take(acme('g', 'ann'))).toMatchObject({ allowed: true });
    });
  });

  describe('when a session quota is used up', () => {
    it('refuses every sender of that session, not of another', async () => {
      const quotas = setup([{ scope: 'session', limit: 1, perMs: MINUTE }]);
      expect((await quotas.take(acme('g', 'ann'))).allowed).toBe(true);
      expect((await quotas.take(acme('g', 'bob'))).allowed).toBe(false);
      expect((await quotas.take(acme('h', 'ann'))).allowed).toBe(true);
    });
  });

  describe('when a tenant quota is used up', () => {
    it('refuses everyone of the tenant, and nobody of another tenant', async () => {
      const quotas = setup([{ scope: 'tenant', limit: 2, perMs: MINUTE }]);
      expect((await quotas.take(acme('a'))).allowed).toBe(true);
      expect((await quotas.take(acme('b'))).allowed).toBe(true);
      expect((await quotas.take(acme('c'))).allowed).toBe(false);
      expect((await quotas.take(message('c', 'hi'))).allowed).toBe(true);
      expect((await quotas.take({ ...message('c', 'hi'), tenant: 'other' })).allowed).toBe(true);
    });
  });

  describe('when a message counts against several quotas', () => {
    it('takes from all or from none: a refused message spends no other quota', async () => {
      const quotas = setup([
        { scope: 'sender', limit: 1, perMs: MINUTE },
        { scope: 'tenant', limit: 2, perMs: MINUTE },
      ]);
      expect((await quotas.take(acme('a', 'ann'))).allowed).toBe(true);
      // Ann's own quota refuses: the tenant's second token stays for someone else.
      for (let i = 0; i < 5; i += 1) expect((await quotas.take(acme('a', 'ann'))).allowed).toBe(false);
      expect((await quotas.take(acme('b', 'bob'))).allowed).toBe(true);
      expect((await quotas.take(acme('c', 'cid'))).allowed).toBe(false);
    });
  });

  describe('when the tenant has a quota_reply', () => {
    it('answers it once per window of the refusing quota per sender, and only where asked to', async () => {
      const quotas = setup([{ scope: 'sender', limit: 1, perMs: MINUTE }], 'Slow down.');
      await quotas.take(acme('a', 'ann'));
      const refusals = [];
      for (let i = 0; i < 4; i += 1) refusals.push(await quotas.take(acme('a', 'ann'), true));
      expect(refusals.map((verdict) => 'reply' in verdict && verdict.reply)).toEqual([
        'Slow down.',
        false,
        false,
        false,
      ]);
      // Bob is told too, once.
      await quotas.take(acme('a', 'bob'));
      expect(await quotas.take(acme('a', 'bob'), true)).toMatchObject({ reply: 'Slow down.' });
      // An HTTP caller (not asked to be told) takes no reply of the window.
      quotas.advance(MINUTE);
      await quotas.take(acme('a', 'ann'));
      expect(await quotas.take(acme('a', 'ann'), false)).not.toHaveProperty('reply');
      expect(await quotas.take(acme('a', 'ann'), true)).toMatchObject({ reply: 'Slow down.' });
    });

    it('tells each session once when the tenant quota refuses', async () => {
      const quotas = setup([{ scope: 'tenant', limit: 1, perMs: MINUTE }], 'Busy.');
      await quotas.take(acme('a'));
      expect(await quotas.take(acme('a'), true)).toMatchObject({ reply: 'Busy.' });
      expect(await quotas.take(acme('a'), true)).not.toHaveProperty('reply');
      expect(await quotas.take(acme('b'), true)).toMatchObject({ reply: 'Busy.' });
    });
  });

  describe('when the tenant has no quota_reply', () => {
    it('refuses without a reply', async () => {
      const quotas = setup([{ scope: 'sender', limit: 1, perMs: MINUTE }]);
      await quotas.take(acme('a'));
      expect(await quotas.take(acme('a'), true)).toEqual({ allowed: false, retryAfterMs: MINUTE });
    });
  });
});

describe('ingress with quotas', () => {
  function ingressSetup(maxPending = 100) {
    const policies = [PipelinePolicySchema.parse({ id: 'echo' })];
    const pool = createMemoryQueryPool({
      concurrency: { global: 1, perSession: 1 },
      limits: { maxPending, maxPendingPerSession: 100 },
      pipelines: policies,
    });
    const router = createRouter(
      {
        default: 'echo',
        rules: [
          {
            name: 'spam',
            type: 'message_content',
            operator: 'contains',
            value: 'spam',
            pipeline: '__discard__',
          },
        ],
      },
      { pipelines: ['echo'] },
    );
    const outcomes: Outcome[] = [];
    const bus = createOutcomeBus();
    bus.subscribe((outcome) => outcomes.push(outcome));
    const replies: Array<[string, string]> = [];
    const ingress = createIngress({
      pool,
      router: () => router,
      outcomes: bus,
      channelPolicy: () => ({ admission: { require_mention: true, prefixes: [] }, sessionScope: 'chat' }),
      tenantOf: () => 'acme',
      quotas: {
        check: createQuotaCheck({
          buckets: createMemoryRateBuckets(),
          quotasOf: () => ({ quotas: [{ scope: 'sender', limit: 1, perMs: MINUTE }], reply: 'Slow down.' }),
        }),
        replierOf: () => (inbound, text) => replies.push([inbound.id, text]),
      },
    });
    return { pool, ingress, outcomes, replies };
  }

  it('ends a message past a quota dropped/quota, enqueues nothing, and asks for the reply once', async () => {
    const { ingress, pool, outcomes, replies } = ingressSetup();
    expect((await ingress.accept(message('a', 'one'))).status).toBe('queued');
    const second = message('a', 'two');
    const result = await ingress.accept(second);
    expect(result).toMatchObject({ status: 'dropped', reason: 'quota' });
    // The sender's token is back a minute after the first message (the real clock moved a little).
    expect(result.status === 'dropped' && result.retryAfterMs).toBeGreaterThan(MINUTE - 5000);
    await ingress.accept(message('a', 'three'));
    expect(
      outcomes.map((outcome) => [outcome.kind, outcome.reason, outcome.message.text, outcome.message.tenant]),
    ).toEqual([
      ['dropped', 'quota', 'two', 'acme'],
      ['dropped', 'quota', 'three', 'acme'],
    ]);
    expect(replies).toEqual([[second.id, 'Slow down.']]);
    expect((await pool.stats()).pending).toBe(1);
  });

  it('calls a redelivery of an accepted message past the quota a duplicate, spending none of the replies', async () => {
    const { ingress, pool, outcomes, replies } = ingressSetup();
    const first = message('a', 'one');
    expect((await ingress.accept(first, 'update-1')).status).toBe('queued');
    // The sender's one token is spent: the platform delivers the same update again.
    expect(await ingress.accept(first, 'update-1')).toEqual({ status: 'duplicate' });
    const second = message('a', 'two');
    expect(await ingress.accept(second, 'update-2')).toMatchObject({ status: 'dropped', reason: 'quota' });
    expect(outcomes.map((outcome) => [outcome.kind, outcome.reason, outcome.message.text])).toEqual([
      ['duplicate', 'redelivery', 'one'],
      ['dropped', 'quota', 'two'],
    ]);
    expect(replies).toEqual([[second.id, 'Slow down.']]);
    expect((await pool.stats()).pending).toBe(1);
  });

  it('takes no token for a message routing discards or admission ignores', async () => {
    const { ingress, outcomes } = ingressSetup();
    expect((await ingress.accept(message('a', 'spam'))).status).toBe('discarded');
    expect((await ingress.accept(message('g', 'hi', { chatType: 'group', sender: 'user-a' }))).status).toBe(
      'ignored',
    );
    expect((await ingress.accept(message('a', 'real'))).status).toBe('queued');
    expect(outcomes.map((outcome) => outcome.kind)).toEqual(['discarded', 'ignored']);
  });

  it('gives the tokens back when the pool refuses the message, so its retries do not use the quota up', async () => {
    const { ingress, pool, outcomes, replies } = ingressSetup(1);
    expect((await ingress.accept(message('b', 'fills the queue'))).status).toBe('queued');
    // The queue is full: the same message offered again and again, as a platform retries it.
    const retried = message('a', 'one');
    for (let i = 0; i < 4; i++) expect((await ingress.accept(retried)).status).toBe('refused');
    expect(outcomes).toEqual([]);
    expect(replies).toEqual([]);
    // Room again: the retry is accepted on the sender's one token, not refused by its quota.
    const [turn] = [await pool.claim()];
    await pool.complete(turn as NonNullable<typeof turn>);
    expect((await ingress.accept(retried)).status).toBe('queued');
  });
});
