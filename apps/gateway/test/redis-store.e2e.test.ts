import { randomUUID } from 'node:crypto';
import { postgresReachable, queryPostgres, startPrivatePostgres } from '@switchboard/testkit/postgres';
import { redisReachable, startPrivateRedis } from '@switchboard/testkit/redis';
import { auditRecordFixture } from '@switchboard/contracts';
import { readUntil, replyEvents } from '@switchboard/testkit/sse';
import { createPostgresStore } from '@switchboard/store-postgres';
import { sessionChannelOf } from '@switchboard/store-redis';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { DAY_MS } from '../src/retention.js';
import { startFakePipeline } from './fake-pipeline.js';
import {
  type OnlyPipeline,
  type SharedStores,
  redisConfig,
  serveOn as serveOnStores,
  sharedStores as sharedStoresOf,
} from './shared-stores.js';
import {
  eventually,
  get,
  post,
  runCli,
  simultaneousPosts,
  startServe,
  tempDir,
  useCleanups,
  writeConfig,
} from './serve-process.js';

const cleanup = useCleanups();
// Both first: each one fails loudly under CI=true when its service is away.
const reachable = (await redisReachable()) && (await postgresReachable());

const sharedStores = (overrides: Partial<SharedStores> = {}) => sharedStoresOf(cleanup, overrides);
const serveOn = (stores: SharedStores, extra = '', pipeline?: OnlyPipeline) =>
  serveOnStores(cleanup, stores, extra, pipeline);

/**
 * An `http` pipeline `bot` whose backend fails fatally (400, so a message is dead-lettered at
 * once) until `state.healthy` is set, then echoes.
 */
async function pipelineFailingUntilHealthy() {
  const backend = await startFakePipeline();
  cleanup(() => backend.close());
  const state = { healthy: false };
  backend.respond = async (request) =>
    state.healthy
      ? { status: 200, body: { replies: [{ text: `ok: ${request.text}` }] } }
      : { status: 400, body: { error: 'bad' } };
  return { backend, state, pipeline: { id: 'bot', yaml: `{ id: bot, type: http, url: "${backend.url}" }` } };
}

/**
 * Two replicas on one pool and one schema, each calling an `http` pipeline `bot` of its own, an
 * echo backend answering after `delayMs`: a backend's requests tell which replica ran what.
 */
async function twoReplicas(delayMs = 50) {
  const backends = await Promise.all([startFakePipeline({ delayMs }), startFakePipeline({ delayMs })]);
  for (const backend of backends) cleanup(() => backend.close());
  const stores = sharedStores();
  const [a, b] = await Promise.all(
    backends.map((backend) =>
      serveOn(stores, '', { id: 'bot', yaml: `{ id: bot, type: http, url: "${backend.url}" }` }),
    ),
  );
  if (a === undefined || b === undefined) throw new Error('two replicas expected');
  const ranOn = (text: string) =>
    backends.findIndex((backend) => backend.requests.some((r) => r.text === text));
  return { stores, backends, replicas: [a, b] as const, ranOn };
}

/** Redis' count of subscribers to one session's reply channel (the HTTP channel's id is `api`). */
async function followersOf(stores: SharedStores, session: string): Promise<number> {
  const admin = new Redis(stores.redisUrl);
  try {
    const [, count] = (await admin.pubsub('NUMSUB', sessionChannelOf(stores.prefix, 'api', session))) as [
      string,
      number,
    ];
    return count;
  } finally {
    admin.disconnect();
  }
}

const message = (text: string) => ({ session_id: `s-${randomUUID()}`, user_id: 'u1', text });

describe.skipIf(!reachable)('store: redis (end to end)', () => {
  describe('when a newcomer follows the quick start with the pool in Redis', () => {
    it('answers a message with its reply, reports it completed and is ready', {
      timeout: 60_000,
    }, async () => {
      const gateway = await serveOn(sharedStores());
      const answer = await post(`${gateway.url}/v1/messages`, message('hello over redis'));
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ status: 'completed', replies: [{ text: 'hello over redis' }] });
      const status = await get(`${gateway.url}/v1/messages/${answer.body?.id}`);
      expect(status.body).toMatchObject({ status: 'completed' });
      const ready = await get(`${gateway.url}/readyz`);
      expect(ready).toMatchObject({ status: 200, body: { checks: { store: { ok: true } } } });
    });

    it("says which metrics are this replica's and which the shared pool's, and lists the replicas", {
      timeout: 60_000,
    }, async () => {
      const stores = sharedStores();
      const [a, b] = await Promise.all([serveOn(stores), serveOn(stores)]);
      const metrics = await get(`${a.url}/metrics`);
      for (const series of [
        'switchboard_inflight{scope="replica"} 0',
        'switchboard_inflight{scope="cluster"} 0',
        'switchboard_queue_pending{scope="cluster"} 0',
      ])
        expect(metrics.body).toContain(series);
      expect(metrics.body).not.toContain('switchboard_queue_pending{scope="replica"}');
      const queues = await get(`${b.url}/admin/queues`);
      expect(queues.status).toBe(200);
      expect(queues.body.replicas).toHaveLength(2);
      for (const replica of queues.body.replicas) {
        expect(replica).toMatchObject({ alive: true, turns_running: 0 });
        expect(replica.heartbeat_expires_at).toBeGreaterThan(Date.now());
      }
    });
  });

  describe('when operators look at the sessions of two replicas', () => {
    it('shows on either replica the turns both run, naming the replica of each, and the session waiting for a slot', {
      timeout: 60_000,
    }, async () => {
      let release = () => {};
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const backends = await Promise.all([startFakePipeline(), startFakePipeline()]);
      for (const backend of backends) {
        cleanup(() => backend.close());
        backend.respond = async (request) => {
          await gate;
          return { status: 200, body: { replies: [{ text: `ok: ${request.text}` }] } };
        };
      }
      const stores = sharedStores();
      const replicas = await Promise.all(
        backends.map((backend) =>
          serveOn(stores, '', {
            id: 'bot',
            yaml: `{ id: bot, type: http, url: "${backend.url}", max_concurrency: 2 }`,
          }),
        ),
      );
      const [a, b] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
      try {
        const sent = ['one', 'two', 'three'].map((text) => post(`${a.url}/v1/messages`, message(text)));
        let view = (await get(`${b.url}/admin/sessions`)).body;
        await eventually(async () => {
          view = (await get(`${b.url}/admin/sessions`)).body;
          // A turn is listed from its claim; its request reaches a backend a moment later.
          const received = backends.reduce((sum, backend) => sum + backend.requests.length, 0);
          return view.running?.length === 2 && view.waiting?.length === 1 && received === 2;
        });
        // Each turn names the replica whose backend got it (replica ids carry the process id).
        for (const turn of view.running) {
          const ranOn = backends.findIndex((backend) =>
            backend.requests.some((r) => r.session.key === turn.session),
          );
          expect(ranOn).toBeGreaterThanOrEqual(0);
          expect(turn).toMatchObject({
            pipeline: 'bot',
            messages: 1,
            pending: 0,
            age_ms: expect.any(Number),
          });
          expect(turn.replica).toContain(`:${replicas[ranOn]?.child.pid}:`);
        }
        expect(view.waiting).toEqual([
          { session: expect.any(String), pipeline: 'bot', pending: 1, oldest_wait_ms: expect.any(Number) },
        ]);
        expect((await get(`${a.url}/admin/sessions`)).body.running).toEqual(
          view.running.map((turn: { age_ms: number }) => ({ ...turn, age_ms: expect.any(Number) })),
        );
        const overview = (await get(`${a.url}/admin/overview`)).body;
        expect(overview.pipelines.bot).toMatchObject({ pending: 1, oldest_wait_ms: expect.any(Number) });
        release();
        await Promise.all(sent);
      } finally {
        release();
      }
    });
  });

  describe('when two replicas share one prefix', () => {
    it('refuses to start a replica whose limits differ, naming the difference', {
      timeout: 60_000,
    }, async () => {
      const stores = sharedStores();
      await serveOn(stores, 'concurrency: { pipeline: 20 }');
      const dir = tempDir();
      const configPath = writeConfig(dir, redisConfig(stores, 'concurrency: { pipeline: 5 }'));
      const refused = await runCli(['serve', '-c', configPath], { cwd: dir });
      expect(refused.code).not.toBe(0);
      const output = refused.stdout + refused.stderr;
      expect(output).toContain('SB_STORE_CONFIG_MISMATCH');
      expect(output).toMatch(/concurrency\.pipeline: this replica 5, the shared store 20/);
    });
  });

  describe('when another replica runs the turn of a message a replica accepted', () => {
    it('answers the waiting request and the status on the accepting replica', {
      timeout: 90_000,
    }, async () => {
      const { replicas, ranOn } = await twoReplicas();
      // Four sessions of five messages, each session's sent alternately to each replica: a
      // replica claims what it accepts while its session is free, and a session's next message
      // waits for its previous turn, whose replica claims the next turn as that turn ends.
      const sessions = Array.from({ length: 4 }, () => `s-${randomUUID()}`);
      const sent = Array.from({ length: 20 }, (_, index) => ({
        text: `message ${index}`,
        accepting: replicas[index % 2] as (typeof replicas)[number],
        session: sessions[Math.floor(index / 2) % 4] as string,
      }));
      const answers = await Promise.all(
        sent.map(({ text, accepting, session }) =>
          post(`${accepting.url}/v1/messages`, { session_id: session, user_id: 'u1', text, wait: true }),
        ),
      );

      for (const [index, answer] of answers.entries()) {
        expect(answer.status, `answer to ${sent[index]?.text}`).toBe(200);
        expect(answer.body).toMatchObject({
          status: 'completed',
          replies: [{ text: `echo: ${sent[index]?.text}` }],
        });
      }
      const crossRuns = sent.filter(({ text }, index) => ranOn(text) !== index % 2);
      expect(crossRuns.length, 'messages run by the replica that did not accept them').toBeGreaterThan(0);

      for (const [index, answer] of answers.entries()) {
        const status = await get(`${sent[index]?.accepting.url}/v1/messages/${answer.body?.id}`);
        expect(status.body).toMatchObject({
          status: 'completed',
          replies: [{ text: `echo: ${sent[index]?.text}` }],
        });
      }
    });
  });

  describe('when a load balancer spreads the requests of one client over two replicas', () => {
    it('shows each of 200 messages on the replica that did not accept it: never 404, then completed with replies', {
      timeout: 180_000,
    }, async () => {
      const { replicas } = await twoReplicas(5);
      const sessions = Array.from({ length: 20 }, () => `s-${randomUUID()}`);
      const sent = await Promise.all(
        Array.from({ length: 200 }, async (_, index) => {
          const text = `message ${index}`;
          const accepting = replicas[index % 2] as (typeof replicas)[number];
          const other = replicas[(index + 1) % 2] as (typeof replicas)[number];
          const answer = await post(`${accepting.url}/v1/messages`, {
            session_id: sessions[index % 20],
            user_id: 'u1',
            text,
            wait: false,
          });
          expect(answer.status, `answer to ${text}`).toBe(202);
          // Asked of the other replica from the start until it is completed, every 100 ms, so
          // that the moments between its turn's end and its stored status are asked about too.
          const deadline = Date.now() + 60_000;
          for (;;) {
            const status = await get(`${other.url}/v1/messages/${answer.body?.id}`);
            expect(status.status, `status of ${text} on the other replica`).toBe(200);
            // Completed with its delivery pending, its replies are on their way: asked again.
            if (status.body.status === 'completed' && status.body.delivery !== 'pending') return status.body;
            expect(['queued', 'running', 'completed'], `${text} on the other replica`).toContain(
              status.body.status,
            );
            expect(Date.now(), `${text} completed within 60 s`).toBeLessThan(deadline);
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        }),
      );
      for (const [index, final] of sent.entries())
        expect(final.replies).toEqual([{ text: `echo: message ${index}` }]);
    });

    it('reads every message completed with its replies on the replica that did not accept it, from its first completed read, in 20 rounds', {
      timeout: 120_000,
    }, async () => {
      const { replicas, ranOn } = await twoReplicas(5);
      const [a, b] = replicas;
      /** Reads `id` on replica b without pause until it reads completed: that first read. */
      const firstCompletedOnB = async (id: string, text: string) => {
        const deadline = Date.now() + 20_000;
        for (;;) {
          const read = await get(`${b.url}/v1/messages/${id}`);
          expect(read.status, `status of ${text} on replica b`).toBe(200);
          if (read.body.status === 'completed') return read.body;
          expect(['queued', 'running'], `${text} on replica b`).toContain(read.body.status);
          expect(Date.now(), `${text} completed within 20 s`).toBeLessThan(deadline);
        }
      };
      const sent: string[] = [];
      for (let round = 0; round < 20; round += 1) {
        await Promise.all(
          Array.from({ length: 10 }, async (_, index) => {
            const text = `round ${round} message ${index}`;
            sent.push(text);
            const wait = index % 2 === 0;
            const body = { session_id: `s-${randomUUID()}`, user_id: 'u1', text, wait };
            const answer = await post(`${a.url}/v1/messages`, body);
            const replies = [{ text: `echo: ${text}` }];
            if (wait) {
              expect(answer.status, `answer to ${text}`).toBe(200);
              expect(answer.body, `answer to ${text}`).toMatchObject({
                status: 'completed',
                delivery: 'delivered',
                replies,
              });
            } else {
              expect(answer.status, `answer to ${text}`).toBe(202);
            }
            // Its replies may still wait in the outbox (delivery pending), but never without them.
            const first = await firstCompletedOnB(answer.body?.id, text);
            expect(first, `first completed read of ${text} on replica b`).toMatchObject({ replies });
            expect(['pending', 'delivered'], `delivery of ${text}`).toContain(first.delivery);
            if (wait) expect(first.delivery, `${text} read after its answer`).toBe('delivered');
            if (first.delivery === 'pending')
              await eventually(
                async () =>
                  (await get(`${b.url}/v1/messages/${answer.body?.id}`)).body.delivery === 'delivered',
                10_000,
                `${text} delivered`,
              );
          }),
        );
      }
      // Replica b read messages whose turn it did not run: a claims what it accepts.
      expect(sent.filter((text) => ranOn(text) === 0).length).toBeGreaterThan(0);
    });

    it('accepts one message per Idempotency-Key sent to both replicas at the same moment, 50 times', {
      timeout: 120_000,
    }, async () => {
      const { backends, replicas } = await twoReplicas(5);
      const keys = Array.from({ length: 50 }, () => randomUUID());
      const pairs = await Promise.all(
        keys.map((key, index) => {
          const body = { session_id: `s-${key}`, user_id: 'u1', text: `keyed ${index}`, wait: true };
          return Promise.all(
            replicas.map((replica) => post(`${replica.url}/v1/messages`, body, { 'idempotency-key': key })),
          );
        }),
      );
      for (const [index, [fromA, fromB]] of pairs.entries()) {
        expect(fromA?.body?.id, `key ${index}: one message id on both replicas`).toBe(fromB?.body?.id);
        for (const answer of [fromA, fromB]) {
          expect(answer?.status).toBe(200);
          expect(answer?.body).toMatchObject({
            status: 'completed',
            replies: [{ text: `echo: keyed ${index}` }],
          });
        }
      }
      const runs = backends.flatMap((backend) => backend.requests.map((request) => request.text));
      expect(runs.sort()).toEqual(keys.map((_, index) => `keyed ${index}`).sort());
    });

    it("binds an Idempotency-Key per caller on every replica, and reads another channel's message as unknown on either", {
      timeout: 120_000,
    }, async () => {
      let release = () => {};
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      cleanup(async () => release());
      const backend = await startFakePipeline();
      cleanup(() => backend.close());
      backend.respond = async (request) => {
        if (request.text.startsWith('held')) await gate;
        return { status: 200, body: { replies: [{ text: `echo: ${request.text}` }] } };
      };
      const stores = sharedStores();
      const channels = `channels:
  - { id: t1, type: openapi, prefix: /t1, api_keys: [key-a, key-b] }
  - { id: t2, type: openapi, prefix: /t2, api_keys: [key-t2] }`;
      const bot = { id: 'bot', yaml: `{ id: bot, type: http, url: "${backend.url}" }` };
      const [a, b] = await Promise.all([serveOn(stores, channels, bot), serveOn(stores, channels, bot)]);
      const [keyA, keyB, keyT2] = ['key-a', 'key-b', 'key-t2'].map((key) => ({
        authorization: `Bearer ${key}`,
      }));
      const key = { 'idempotency-key': `order-${randomUUID()}` };
      const first = { session_id: `s-${randomUUID()}`, user_id: 'alice', text: 'my secret question' };

      const mine = await post(`${a.url}/t1/messages`, first, { ...keyA, ...key });
      expect(mine.body).toMatchObject({
        status: 'completed',
        replies: [{ text: 'echo: my secret question' }],
      });
      // Caller B's key, on the other replica: its own message.
      const theirs = await post(
        `${b.url}/t1/messages`,
        { session_id: `s-${randomUUID()}`, user_id: 'bob', text: 'something else' },
        { ...keyB, ...key },
      );
      expect(theirs.body).toMatchObject({ status: 'completed', replies: [{ text: 'echo: something else' }] });
      expect(theirs.body?.id).not.toBe(mine.body?.id);
      // Caller A on the other replica: its first message again, or 422 with another body.
      const again = await post(`${b.url}/t1/messages`, first, { ...keyA, ...key });
      expect(again.body).toMatchObject({ id: mine.body?.id, status: 'completed' });
      const reused = await post(`${b.url}/t1/messages`, { ...first, text: 'other' }, { ...keyA, ...key });
      expect(reused.status).toBe(422);
      expect(reused.body?.error.code).toBe('SB_IDEMPOTENCY_KEY_REUSED');

      // A message of t1 that the pool holds, then PostgreSQL: t2 on the other replica never sees it.
      const held = await post(`${a.url}/t1/messages`, { ...first, text: 'held secret', wait: false }, keyA);
      expect(held.status).toBe(202);
      const id = held.body?.id as string;
      await eventually(async () => backend.requests.some((request) => request.text === 'held secret'));
      expect((await get(`${b.url}/t1/messages/${id}`, keyA)).body).toMatchObject({ id, status: 'running' });
      expect((await get(`${b.url}/t2/messages/${id}`, keyT2)).status).toBe(404);
      release();
      await eventually(async () => {
        const status = await get(`${b.url}/t1/messages/${id}`, keyA);
        return status.body?.status === 'completed' && status.body?.delivery === 'delivered';
      });
      for (const replica of [a, b]) {
        const asked = await get(`${replica.url}/t2/messages/${id}`, keyT2);
        expect(asked.status).toBe(404);
        expect(JSON.stringify(asked.body)).not.toContain('held secret');
      }
    });

    it('streams to a client of one replica the replies the other replica sends', {
      timeout: 90_000,
    }, async () => {
      const { stores, replicas, ranOn } = await twoReplicas();
      const [a, b] = replicas;
      const session = `s-${randomUUID()}`;
      const abort = new AbortController();
      cleanup(async () => abort.abort());
      const stream = await fetch(`${a.url}/v1/sessions/${session}/events`, { signal: abort.signal });
      const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
      await readUntil(reader, (text) => text.includes(': connected'));
      await eventually(
        async () => (await followersOf(stores, session)) === 1,
        10_000,
        'replica a follows the session',
      );

      // Either replica may claim a turn: messages go on until replica b ran some (each replica
      // claims about half, so 4 in a row on replica a happened; 30 in a row would not).
      const texts: string[] = [];
      const answers = [];
      while (texts.length < 4 || (texts.every((text) => ranOn(text) !== 1) && texts.length < 30)) {
        const text = `message ${texts.length + 1}`;
        texts.push(text);
        answers.push(
          await post(`${b.url}/v1/messages`, { session_id: session, user_id: 'u1', text, wait: true }),
        );
      }
      expect(texts.filter((text) => ranOn(text) === 1).length, 'turns run by replica b').toBeGreaterThan(0);
      const received = await readUntil(reader, (text) => replyEvents(text).length === texts.length, 10_000);
      expect(replyEvents(received)).toEqual(
        answers.map((answer, index) => ({
          message_id: answer.body?.id,
          turn: answer.body?.turn,
          text: `echo: ${texts[index]}`,
        })),
      );
      abort.abort();
    });
  });

  describe('when the audit log is in PostgreSQL', () => {
    it('switchboard audit --json answers the records GET /admin/audit answers, filters included', {
      timeout: 60_000,
    }, async () => {
      const { state, pipeline } = await pipelineFailingUntilHealthy();
      const gateway = await serveOn(sharedStores(), '', pipeline);
      const failed = await post(`${gateway.url}/v1/messages`, message('first'));
      expect(failed.body).toMatchObject({ status: 'dead_lettered', reason: 'fatal_error' });
      await post(`${gateway.url}/v1/messages`, message('second'));
      state.healthy = true;
      expect((await post(`${gateway.url}/v1/messages`, message('third'))).body?.status).toBe('completed');

      const cliAudit = async (filters: Record<string, string>) => {
        const flags = Object.entries(filters).flatMap(([name, value]) => [`--${name}`, value]);
        const result = await runCli(['audit', '-c', gateway.configPath, '--json', ...flags], {
          cwd: gateway.dir,
        });
        expect(result.code, result.stderr).toBe(0);
        return JSON.parse(result.stdout);
      };
      const all = await cliAudit({});
      expect(all.items.map((item: { text: string }) => item.text)).toEqual(['second', 'first']);
      expect(all).toEqual((await get(`${gateway.url}/admin/audit`)).body);
      const filters = { outcome: 'dead_lettered', limit: '1' };
      const page = await cliAudit(filters);
      expect(page.next_cursor).toEqual(expect.any(String));
      expect(page).toEqual((await get(`${gateway.url}/admin/audit?${new URLSearchParams(filters)}`)).body);
    });

    it('prunes audit records older than audit.retention_days (30 by default) from PostgreSQL when it starts', {
      timeout: 60_000,
    }, async () => {
      const stores = sharedStores();
      const seeded = await createPostgresStore({ url: stores.postgresUrl, schema: stores.schema });
      cleanup(() => seeded.close());
      const old = auditRecordFixture(1, { at: Date.now() - 31 * DAY_MS });
      const recent = auditRecordFixture(2, { at: Date.now() });
      await seeded.auditLog.append(old);
      await seeded.auditLog.append(recent);
      const gateway = await serveOn(stores);
      await eventually(
        () =>
          gateway.logs.some((line) => line.msg === 'pruned' && line.task === 'audit' && line.removed === 1),
        20_000,
        'the audit prune',
      );
      const { items } = await seeded.auditLog.query({ limit: 10 });
      expect(items.map((item) => item.id)).toEqual([recent.id]);
    });

    it('stays ready while PostgreSQL is away, naming it, for records wait in the Redis outbox', {
      timeout: 120_000,
    }, async () => {
      const postgres = await startPrivatePostgres();
      cleanup(() => postgres.remove());
      const gateway = await serveOn(sharedStores({ postgresUrl: postgres.url }));
      expect(await get(`${gateway.url}/readyz`)).toMatchObject({
        status: 200,
        body: { checks: { store: { ok: true } } },
      });

      await postgres.stop();
      const degraded = await get(`${gateway.url}/readyz`);
      expect(degraded.status).toBe(200);
      expect(degraded.body.checks.store).toEqual({
        ok: true,
        detail: expect.stringMatching(
          /^postgresql: .*; audit records and statuses wait in the redis outbox$/,
        ),
      });

      await postgres.start();
      await eventually(
        async () => (await get(`${gateway.url}/readyz`)).body.checks.store.detail === undefined,
        30_000,
        'PostgreSQL no longer named',
      );
    });
  });

  describe('when PostgreSQL is away while messages are audited', () => {
    const DISCARD_DROPS = `routing:
  default: echo
  rules: [{ name: drop, type: message_content, operator: regex, value: "^drop", pipeline: __discard__ }]`;
    /** A gateway whose `drop…` messages are discarded (each one audit record), on a private PostgreSQL. */
    async function auditedGateway(extraAudit = '') {
      const postgres = await startPrivatePostgres();
      cleanup(() => postgres.remove());
      const stores = sharedStores({ postgresUrl: postgres.url });
      const dir = tempDir();
      const yaml = redisConfig(stores)
        .replace(`schema: ${stores.schema} }`, `schema: ${stores.schema}${extraAudit} }`)
        .replace(`routing: { default: echo }`, DISCARD_DROPS);
      const gateway = await startServe({ dir, configPath: writeConfig(dir, yaml) });
      cleanup(() => gateway.stop('SIGTERM'));
      const discardedCount = async () => {
        const rows = await queryPostgres<{ count: string }>(
          `SELECT count(*) AS count FROM "${stores.schema}".audit WHERE outcome = 'discarded'`,
          [],
          postgres.url,
        );
        return Number(rows[0]?.count);
      };
      return { gateway, postgres, discardedCount };
    }

    it('loses no audit record and no final status of two replicas under load while it is away 10 s', {
      timeout: 180_000,
    }, async () => {
      const postgres = await startPrivatePostgres();
      cleanup(() => postgres.remove());
      const stores = sharedStores({ postgresUrl: postgres.url });
      const yaml = redisConfig(stores).replace(`routing: { default: echo }`, DISCARD_DROPS);
      const replicas = await Promise.all(
        [0, 1].map(async () => {
          const dir = tempDir();
          const gateway = await startServe({ dir, configPath: writeConfig(dir, yaml) });
          cleanup(() => gateway.stop('SIGTERM'));
          return gateway;
        }),
      );
      const discardedCount = async () => {
        const rows = await queryPostgres<{ count: string }>(
          `SELECT count(*) AS count FROM "${stores.schema}".audit WHERE outcome = 'discarded'`,
          [],
          postgres.url,
        );
        return Number(rows[0]?.count);
      };
      // Each replica gets a steady stream of messages, every other one discarded (an audit record),
      // the others echoed (a final status), until the outage is over.
      let sending = true;
      let discarded = 0;
      const completed: Array<{ id: string; text: string; other: string }> = [];
      const load = replicas.map(async (replica, index) => {
        const other = (replicas[1 - index] as (typeof replicas)[number]).url;
        for (let i = 0; sending; i++) {
          const text = i % 2 === 0 ? `drop ${index}-${i}` : `hello ${index}-${i}`;
          const answer = await post(`${replica.url}/v1/messages`, message(text));
          expect(answer.status, `answer to ${text}`).toBe(200);
          if (answer.body?.status === 'discarded') discarded += 1;
          else completed.push({ id: answer.body?.id, text, other });
        }
      });
      const sentAtLeast = (count: number) =>
        eventually(() => discarded + completed.length >= count, 30_000, `${count} messages sent`);
      await sentAtLeast(20);
      await postgres.stop();
      const during = discarded + completed.length;
      // The outage lasts a fixed 10 s of load: its length is the scenario, not a wait for a condition.
      await new Promise((resolve) => setTimeout(resolve, 10_000));
      expect(
        discarded + completed.length - during,
        'messages answered while PostgreSQL was away',
      ).toBeGreaterThan(20);
      await postgres.start();
      await sentAtLeast(discarded + completed.length + 20);
      sending = false;
      await Promise.all(load);

      await eventually(
        async () => (await discardedCount().catch(() => 0)) === discarded,
        30_000,
        'every record',
      );
      for (const { id, text, other } of completed) {
        const status = await eventually(
          async () => {
            const answer = await get(`${other}/v1/messages/${id}`);
            // Its replies sent: a status says `delivery: pending` while they wait in the outbox.
            return answer.body?.status === 'completed' && answer.body.delivery === 'delivered'
              ? answer
              : undefined;
          },
          30_000,
          `${text} completed on the other replica`,
        );
        expect(status.body.replies).toEqual([{ text }]);
      }
      // Sending an answer never waited on PostgreSQL: a failed send is retried after a backoff.
      const failedSends = replicas
        .flatMap((replica) => replica.logs)
        .filter((line) => line.msg === 'send failed, retrying');
      expect(failedSends).toEqual([]);
    });

    it('answers 503 with Retry-After while the outbox is full, and admits again once it drains', {
      timeout: 120_000,
    }, async () => {
      const { gateway, postgres, discardedCount } = await auditedGateway(', outbox_max_entries: 3');
      await postgres.stop();
      let admitted = 0;
      const refused = await eventually(
        async () => {
          const answer = await post(`${gateway.url}/v1/messages`, message('drop while away'));
          if (answer.status === 200) admitted += 1;
          return answer.status === 503 ? answer : undefined;
        },
        20_000,
        'a 503 once the outbox is full',
      );
      expect(refused.body?.error.code).toBe('SB_STORE_UNAVAILABLE');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      const full = await get(`${gateway.url}/readyz`);
      expect(full.status).toBe(503);
      expect(full.body.checks.store.detail).toMatch(/the audit outbox is full$/);
      await postgres.start();
      await eventually(
        async () => (await post(`${gateway.url}/v1/messages`, message('drop after'))).status === 200,
        30_000,
        'admitted again',
      );
      // Those admitted while it was away (each a record and a status in the outbox), and the one
      // admitted after it drained.
      expect(admitted).toBeGreaterThan(0);
      await eventually(async () => (await discardedCount()) === admitted + 1, 10_000, 'every record stored');
    });
  });

  describe('when replicas on one pool and one schema replay one dead letter at once', () => {
    it('queues it once: one replay answers 202, the others 409, and the pipeline runs it once more', {
      timeout: 60_000,
    }, async () => {
      const { backend, state, pipeline } = await pipelineFailingUntilHealthy();
      const stores = sharedStores();
      const first = await serveOn(stores, '', pipeline);
      const second = await serveOn(stores, '', pipeline);
      // Not waiting: either replica may run it, and only the accepting one answers a wait.
      const accepted = await post(`${first.url}/v1/messages`, { ...message('help'), wait: false });
      expect(accepted.status).toBe(202);
      const messageId = accepted.body?.id;
      // Both replicas list it, whichever dead-lettered it: the audit log is shared.
      const listed = await eventually(
        async () => {
          const lists = await Promise.all(
            [first, second].map((replica) => get(`${replica.url}/admin/dead-letters`)),
          );
          return lists.every((list) => list.body.items.length === 1) && lists;
        },
        20_000,
        'the dead letter on both replicas',
      );
      expect(listed.map((list) => list.body.items[0].message_id)).toEqual([messageId, messageId]);
      const deadLetterId = listed[0]?.body.items[0].id;

      state.healthy = true;
      // Three at once on each replica: each one's requests run in one event-loop turn, so they race
      // each other as well as the other replica's.
      const replays = (
        await Promise.all(
          [first, second].map((replica) =>
            simultaneousPosts(`${replica.url}/admin/dead-letters/${deadLetterId}/replay`, 3),
          ),
        )
      ).flat();
      expect(replays.map((replay) => replay.status).sort()).toEqual([202, 409, 409, 409, 409, 409]);
      // The pipeline's second request is the replay; a second replay would follow it at once.
      await eventually(
        async () => (await get(`${second.url}/v1/messages/${messageId}`)).body.status === 'completed',
        20_000,
        'the replay completed',
      );
      expect((await get(`${first.url}/admin/queues`)).body).toMatchObject({ pending: 0, inflight: 0 });
      expect(backend.requests.map((request) => request.text)).toEqual(['help', 'help']);
      expect((await get(`${first.url}/admin/dead-letters`)).body.items).toEqual([]);
    });
  });

  describe('when Redis goes away and comes back', () => {
    it('answers 503 with Retry-After and is not ready meanwhile, then serves again by itself', {
      timeout: 120_000,
    }, async () => {
      const redis = await startPrivateRedis();
      cleanup(() => redis.remove());
      const gateway = await serveOn(sharedStores({ redisUrl: redis.url, prefix: 'outage' }));
      expect((await post(`${gateway.url}/v1/messages`, message('before'))).status).toBe(200);

      await redis.stop();
      const refused = await post(`${gateway.url}/v1/messages`, message('during'));
      expect(refused.status).toBe(503);
      expect(refused.body?.error.code).toBe('SB_STORE_UNAVAILABLE');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      const notReady = await get(`${gateway.url}/readyz`);
      expect(notReady).toMatchObject({ status: 503, body: { checks: { store: { ok: false } } } });

      await redis.start();
      const after = await eventually(
        async () => {
          const answer = await post(`${gateway.url}/v1/messages`, message('after'));
          return answer.status === 200 ? answer : undefined;
        },
        30_000,
        'a 200 once Redis is back',
      );
      expect(after.body).toMatchObject({ status: 'completed', replies: [{ text: 'after' }] });
      expect((await get(`${gateway.url}/readyz`)).status).toBe(200);
    });

    it('is not ready while Redis may evict keys (maxmemory-policy other than noeviction)', {
      timeout: 60_000,
    }, async () => {
      const redis = await startPrivateRedis();
      cleanup(() => redis.remove());
      const gateway = await serveOn(sharedStores({ redisUrl: redis.url, prefix: 'eviction' }));
      const admin = new Redis(redis.url);
      cleanup(async () => admin.quit());
      await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
      const notReady = await get(`${gateway.url}/readyz`);
      expect(notReady.status).toBe(503);
      expect(notReady.body.checks.store.detail).toContain('allkeys-lru');
    });
  });

  describe('when Redis runs an enqueue only after its command timeout (its reply is lost)', () => {
    it('answers the message, taken once, instead of a 503 that a client would resend as a second one', {
      timeout: 60_000,
    }, async () => {
      const redis = await startPrivateRedis();
      cleanup(() => redis.remove());
      const gateway = await serveOn(sharedStores({ redisUrl: redis.url, prefix: 'reply-lost' }));
      const admin = new Redis(redis.url);
      cleanup(async () => admin.quit());
      const accepted = async () => Number(await admin.get('{reply-lost}:seq'));
      const before = await accepted();

      // Longer than the 2 s command timeout: the first call's reply is lost, Redis runs it after.
      await admin.client('PAUSE', 2500, 'WRITE');
      const answer = await post(`${gateway.url}/v1/messages`, message('held'));
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ status: 'completed', replies: [{ text: 'held' }] });
      expect(await accepted()).toBe(before + 1);
    });
  });
});
