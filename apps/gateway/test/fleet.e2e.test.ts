import { randomUUID } from 'node:crypto';
import { postgresReachable } from '@switchboard/testkit/postgres';
import { redisReachable, startPrivateCluster, startPrivateRedis } from '@switchboard/testkit/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakePipeline } from './fake-pipeline.js';
import { type SharedStores, acceptedByPartition, serveOn, sharedStores } from './shared-stores.js';
import { type JsonAnswer, eventually, get, post, useCleanups } from './serve-process.js';

const cleanup = useCleanups();
const postgresUp = await postgresReachable();
const reachable = (await redisReachable()) && postgresUp;

/**
 * Where a fleet keeps its pool: the shared Redis, or a private Redis Cluster of three primaries
 * with the sessions spread over 4 partitions (docs/design.md §5 "Partitions"), on which every
 * replica guarantee holds the same. `start` gives what the stores of each test there add.
 */
const POOLS = [
  { name: 'one Redis', reachable, start: async () => ({ overrides: {}, remove: async () => {} }) },
  {
    name: 'a Redis Cluster of three primaries in 4 partitions',
    reachable: postgresUp,
    start: async () => {
      const cluster = await startPrivateCluster(3);
      return { overrides: { cluster: cluster.urls, partitions: 4 }, remove: () => cluster.remove() };
    },
  },
];

/** One call the pipeline backends received: who ran which message, when, which attempt. */
interface BackendCall {
  replica: number;
  session: string;
  text: string;
  attempt: number;
  start: number;
  end?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `count` replicas of `switchboard serve` on one pool and one schema, each calling an `http`
 * pipeline `bot` of its own that answers after `delayMs`. The backends record every call and how
 * many ran at once across all of them.
 */
async function fleetOf(count: number, options: { delayMs: number; extra?: string; stores?: SharedStores }) {
  const stores = options.stores ?? sharedStores(cleanup);
  const calls: BackendCall[] = [];
  const load = { running: 0, most: 0 };
  const backends = await Promise.all(
    Array.from({ length: count }, async (_, replica) => {
      const backend = await startFakePipeline();
      cleanup(() => backend.close());
      backend.respond = async (request) => {
        const call: BackendCall = {
          replica,
          session: request.session.chat_id,
          text: request.text,
          attempt: request.attempt,
          start: Date.now(),
        };
        calls.push(call);
        load.running += 1;
        load.most = Math.max(load.most, load.running);
        try {
          await sleep(options.delayMs);
          return { status: 200, body: { replies: [{ text: `echo: ${request.text}` }] } };
        } finally {
          load.running -= 1;
          call.end = Date.now();
        }
      };
      return backend;
    }),
  );
  const replicas = [];
  for (const backend of backends) {
    const pipeline = { id: 'bot', yaml: `{ id: bot, type: http, url: "${backend.url}", timeout: 60s }` };
    replicas.push(await serveOn(cleanup, stores, options.extra ?? '', pipeline));
  }
  return { stores, calls, load, replicas };
}

type Replica = Awaited<ReturnType<typeof fleetOf>>['replicas'][number];

/** Sends `text` to `replica` without waiting for its replies; the answer must be 202. */
async function send(replica: Replica, session: string, text: string): Promise<string> {
  const answer = await post(`${replica.url}/v1/messages`, {
    session_id: session,
    user_id: 'u1',
    text,
    wait: false,
  });
  expect(answer.status, `answer to ${text}`).toBe(202);
  return answer.body?.id as string;
}

/** Waits until `id` reads completed on `replica`, and returns its status. */
function completedOn(replica: Replica, id: string, withinMs = 60_000): Promise<JsonAnswer['body']> {
  return eventually(
    async () => {
      const status = await get(`${replica.url}/v1/messages/${id}`);
      return status.body?.status === 'completed' ? status.body : undefined;
    },
    withinMs,
    `message ${id} completed`,
  );
}

/**
 * Checks that the pool of `stores` accepted `count` messages, read on its own nodes: spread over
 * two partitions at least when it has several.
 */
async function expectAcceptedOnPool(stores: SharedStores, count: number): Promise<void> {
  const accepted = await acceptedByPartition(stores);
  expect(
    accepted.reduce((sum, each) => sum + each, 0),
    'messages the partitions accepted',
  ).toBe(count);
  expect(accepted.filter((each) => each > 0).length, 'partitions that accepted some').toBeGreaterThanOrEqual(
    Math.min(accepted.length, 2),
  );
}

for (const pool of POOLS)
  describe.skipIf(!pool.reachable)(`a fleet of replicas on ${pool.name} and PostgreSQL (end to end)`, () => {
    let started: Awaited<ReturnType<typeof pool.start>>;
    // Kept so that a start the hook's timeout abandoned is still removed once it finishes.
    let starting: ReturnType<typeof pool.start> | undefined;
    beforeAll(async () => {
      starting = pool.start();
      started = await starting;
    }, 60_000);
    afterAll(async () => {
      await (await starting?.catch(() => undefined))?.remove();
    });
    /** Stores of one test on this pool, removed after it. */
    const storesOnPool = () => sharedStores(cleanup, started.overrides);

    describe('when 20 sessions × 10 messages go round-robin to 3 replicas under a global limit of 5', () => {
      it('runs each session in order, one call at a time, never more than 5 at once, and every replica reads every message completed', {
        timeout: 180_000,
      }, async () => {
        const { stores, calls, load, replicas } = await fleetOf(3, {
          delayMs: 300,
          extra: 'concurrency: { pipeline: 5 }',
          stores: storesOnPool(),
        });
        const sessions = Array.from({ length: 20 }, (_, index) => `s${index}-${randomUUID()}`);
        // Each session's messages are sent one after another (so the acceptance order is known),
        // the sessions at once; message i goes to replica i mod 3.
        let sent = 0;
        const ids = (
          await Promise.all(
            sessions.map(async (session) => {
              const ofSession: string[] = [];
              for (let index = 0; index < 10; index++) {
                const replica = replicas[sent++ % 3] as Replica;
                ofSession.push(await send(replica, session, `${session} #${index}`));
              }
              return ofSession;
            }),
          )
        ).flat();
        await expectAcceptedOnPool(stores, ids.length);
        for (const id of ids) await completedOn(replicas[0] as Replica, id, 120_000);

        expect(load.most, 'calls at once, measured at the backends').toBeLessThanOrEqual(5);
        expect(load.most).toBeGreaterThan(1);
        expect(new Set(calls.map((call) => call.replica)).size, 'replicas that ran turns').toBe(3);
        for (const session of sessions) {
          const ofSession = calls
            .filter((call) => call.session === session)
            .sort((a, b) => a.start - b.start);
          expect(ofSession.map((call) => call.text)).toEqual(
            Array.from({ length: 10 }, (_, i) => `${session} #${i}`),
          );
          for (let index = 1; index < ofSession.length; index++) {
            const [before, after] = [ofSession[index - 1] as BackendCall, ofSession[index] as BackendCall];
            expect(before.end, `${after.text} starts after ${before.text} ended`).toBeLessThanOrEqual(
              after.start,
            );
          }
        }
        for (const replica of replicas.slice(1))
          for (const id of ids)
            expect((await get(`${replica.url}/v1/messages/${id}`)).body?.status).toBe('completed');
      });
    });

    describe('when a replica holding turns is killed (kill -9)', () => {
      it('runs those turns again elsewhere, attempt 2, within one lease plus a few seconds; nothing else runs twice', {
        timeout: 180_000,
      }, async () => {
        const { stores, calls, replicas } = await fleetOf(3, {
          delayMs: 4000,
          extra: 'concurrency: { pipeline: 10 }',
          stores: storesOnPool(),
        });
        const messages = await Promise.all(
          Array.from({ length: 9 }, async (_, index) => {
            const session = `s${index}-${randomUUID()}`;
            const text = `turn ${index}`;
            return { text, id: await send(replicas[index % 3] as Replica, session, text) };
          }),
        );
        await expectAcceptedOnPool(stores, messages.length);
        const openOn = (replica: number) =>
          calls.filter((call) => call.replica === replica && call.end === undefined);
        const { victim } = await eventually(
          () => {
            const found = [0, 1, 2].findIndex((replica) => openOn(replica).length >= 2);
            return found >= 0 ? { victim: found } : undefined;
          },
          30_000,
          'a replica running two turns',
        );
        const killedAt = Date.now();
        (replicas[victim] as Replica).child.kill('SIGKILL');
        const survivor = replicas[(victim + 1) % 3] as Replica;

        for (const { id } of messages) await completedOn(survivor, id, 60_000);
        // The victim's turns whose answer it never got: running at the kill, or whose request
        // reached the backend only after it (the backends finish every call).
        const interrupted = calls
          .filter((call) => call.replica === victim && (call.end ?? Number.POSITIVE_INFINITY) > killedAt)
          .map((call) => call.text);
        expect(interrupted.length).toBeGreaterThanOrEqual(2);
        const rerunAfterMs = interrupted.map((text) => {
          const again = calls.find((call) => call.text === text && call.replica !== victim);
          expect(again, `${text} ran again on another replica`).toBeDefined();
          expect(again?.attempt).toBeGreaterThanOrEqual(2);
          return (again as BackendCall).start - killedAt;
        });
        console.log(`turns of the killed replica ran again ${rerunAfterMs.join(' ms, ')} ms after the kill`);
        for (const delay of rerunAfterMs) expect(delay).toBeLessThan(15_000 + 8_000);
        for (const { text } of messages) {
          const runs = calls.filter((call) => call.text === text).length;
          expect(runs, `calls for ${text}`).toBe(interrupted.includes(text) ? 2 : 1);
        }
      });
    });

    describe('when one replica is stopped gracefully under load', () => {
      it("ends within drain_timeout, starts none of the others' backlog meanwhile, and the others run it", {
        timeout: 180_000,
      }, async () => {
        // Turns long enough that replica 0's first ones still run when it is stopped.
        const delayMs = 3000;
        const { calls, replicas } = await fleetOf(3, {
          delayMs,
          extra: 'concurrency: { pipeline: 6 }\nshutdown: { drain_timeout: 8s }',
          stores: storesOnPool(),
        });
        const sendAll = (indexes: number[]) =>
          Promise.all(
            indexes.map(async (index) => {
              const text = `backlog ${index}`;
              return { text, id: await send(replicas[index % 3] as Replica, `s${index % 10}-${text}`, text) };
            }),
          );
        const indexes = Array.from({ length: 30 }, (_, index) => index);
        // Replica 0's first: each enqueue into a free slot runs at once on the replica that took it,
        // and each turn's end claims that replica's next, so replica 0 would run nothing if the
        // others' enqueues took every slot first (the machine's timing decides that order).
        const ofReplica0 = await sendAll(indexes.filter((index) => index % 3 === 0));
        await eventually(() => calls.some((call) => call.replica === 0), 30_000, 'replica 0 running a turn');
        const messages = [...ofReplica0, ...(await sendAll(indexes.filter((index) => index % 3 !== 0)))];
        const stoppedAt = Date.now();
        const runningAtStop = calls.filter(
          (call) =>
            call.replica === 0 &&
            call.start <= stoppedAt &&
            (call.end ?? Number.POSITIVE_INFINITY) > stoppedAt,
        );
        expect(runningAtStop.length, 'replica 0 turns running when it is stopped').toBeGreaterThan(0);
        const exitCode = await (replicas[0] as Replica).stop('SIGTERM');
        const stoppedInMs = Date.now() - stoppedAt;
        console.log(`replica 0 stopped in ${stoppedInMs} ms`);
        expect(exitCode).toBe(0);
        expect(stoppedInMs).toBeLessThan(8000 + 2000);
        // A claim answered just before the signal may still start its call: a moment's grace, but
        // none once a turn running at the stop ended (a stopping replica claims no next turn).
        const firstEnd = Math.min(...runningAtStop.map((call) => call.end ?? Number.POSITIVE_INFINITY));
        const startedWhileStopping = calls.filter(
          (call) =>
            call.replica === 0 &&
            call.start > stoppedAt &&
            (call.start > stoppedAt + 500 || call.start >= firstEnd),
        );
        expect(startedWhileStopping).toEqual([]);
        for (const { id } of messages) await completedOn(replicas[1] as Replica, id, 90_000);
        expect(calls.filter((call) => call.replica !== 0).length).toBeGreaterThan(0);
      });
    });
  });

// Stays on one Redis: the scenario stops and restarts the one server the fleet uses. On a cluster
// that is another scenario (every primary down and the cluster formed again, or one shard down
// while the other partitions serve), for a test of its own.
describe.skipIf(!reachable)('a fleet of replicas on one Redis and PostgreSQL, losing it (end to end)', () => {
  describe('when Redis is killed for 10 s under 50 messages a second', () => {
    it('answers 503 with Retry-After meanwhile, takes the retries later, completes every accepted message, and no replica restarts', {
      timeout: 240_000,
    }, async () => {
      const redis = await startPrivateRedis();
      cleanup(() => redis.remove());
      const stores = sharedStores(cleanup, { redisUrl: redis.url });
      const { replicas } = await fleetOf(3, { delayMs: 5, stores });
      const pids = replicas.map((replica) => replica.child.pid);

      const accepted: Array<{ id: string; text: string }> = [];
      let refusals = 0;
      /** Sends until accepted, waiting out each 503's Retry-After. */
      async function deliver(index: number): Promise<void> {
        const text = `load ${index}`;
        for (let attempt = 0; ; attempt++) {
          const replica = replicas[(index + attempt) % 3] as Replica;
          const answer = await post(`${replica.url}/v1/messages`, {
            session_id: `s${index % 25}`,
            user_id: 'u1',
            text,
            wait: false,
          }).catch(() => null);
          if (answer?.status === 202 || answer?.status === 200) {
            accepted.push({ id: answer.body?.id, text });
            return;
          }
          expect(answer?.status, `answer to ${text}`).toBe(503);
          const retryAfter = Number(answer?.headers.get('retry-after'));
          expect(retryAfter, 'Retry-After of a 503').toBeGreaterThanOrEqual(1);
          refusals += 1;
          await sleep(retryAfter * 1000);
        }
      }

      let sending = true;
      const deliveries: Array<Promise<void>> = [];
      const sender = (async () => {
        for (let index = 0; sending; index++) {
          deliveries.push(deliver(index));
          await sleep(20);
        }
      })();
      await eventually(() => accepted.length >= 50, 30_000, '50 accepted before the crash');
      await redis.stop('SIGKILL');
      const readyDuring = await Promise.all(
        replicas.map((replica) =>
          eventually(
            async () => (await get(`${replica.url}/readyz`)).status === 503,
            10_000,
            'not ready while Redis is away',
          ),
        ),
      );
      expect(readyDuring).toEqual([true, true, true]);
      // The outage lasts 10 s of load: its length is the scenario, not a wait for a condition.
      await sleep(10_000);
      await redis.start();
      const backAt = Date.now();
      const readyAfterMs = await Promise.all(
        replicas.map(async (replica) => {
          await eventually(
            async () => (await get(`${replica.url}/readyz`)).status === 200,
            15_000,
            'ready again',
          );
          return Date.now() - backAt;
        }),
      );
      console.log(`ready again ${readyAfterMs.join(' ms, ')} ms after Redis returned`);
      for (const ms of readyAfterMs) expect(ms).toBeLessThanOrEqual(5000);
      await sleep(2000);
      sending = false;
      await sender;
      await Promise.all(deliveries);

      expect(refusals, '503s while Redis was away').toBeGreaterThan(0);
      for (const { id } of accepted) await completedOn(replicas[0] as Replica, id, 60_000);
      expect(replicas.map((replica) => replica.child.exitCode)).toEqual([null, null, null]);
      expect(replicas.map((replica) => replica.child.pid)).toEqual(pids);
    });
  });
});
