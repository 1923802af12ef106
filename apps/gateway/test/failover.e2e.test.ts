import { randomUUID } from 'node:crypto';
import { postgresReachable } from '@switchboard/testkit/postgres';
import { infoField, redisReachable, startReplicatedRedis } from '@switchboard/testkit/redis';
import { startTcpProxy } from '@switchboard/testkit/tcp-proxy';
import { describe, expect, it } from 'vitest';
import { startFakePipeline } from './fake-pipeline.js';
import { serveOn, sharedStores } from './shared-stores.js';
import { eventually, get, post, useCleanups } from './serve-process.js';

const cleanup = useCleanups();
const reachable = (await redisReachable()) && (await postgresReachable());

/**
 * Two gateways on a Redis primary with one replica, behind one address (a TCP proxy, as a managed
 * endpoint), with `store.wait_replicas: waitReplicas`; both call one backend, which holds every
 * answer until `release()`.
 */
async function replicatedFleet(waitReplicas: number) {
  const redis = await startReplicatedRedis();
  cleanup(() => redis.remove());
  const proxy = await startTcpProxy(redis.primary.port);
  cleanup(() => proxy.close());
  const stores = sharedStores(cleanup, {
    redisUrl: `redis://127.0.0.1:${proxy.port}`,
    storeOptions: `wait_replicas: ${waitReplicas}, wait_timeout: 300ms`,
  });
  const backend = await startFakePipeline();
  cleanup(() => backend.close());
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const calls = new Map<string, number>();
  let open = 0;
  backend.respond = async (request) => {
    calls.set(request.text, (calls.get(request.text) ?? 0) + 1);
    open += 1;
    try {
      await released;
      return { status: 200, body: { replies: [{ text: `echo: ${request.text}` }] } };
    } finally {
      open -= 1;
    }
  };
  const pipeline = { id: 'bot', yaml: `{ id: bot, type: http, url: "${backend.url}", timeout: 60s }` };
  const extra = 'concurrency: { pipeline: 50 }';
  const replicas = [await serveOn(cleanup, stores, extra, pipeline), await serveOn(cleanup, stores, extra, pipeline)];
  let frozen = false;
  cleanup(async () => {
    if (frozen) redis.replica.signal('SIGCONT');
  });
  let sent = 0;

  return {
    replicas,
    calls,
    release,
    openCalls: () => open,
    /** Sends `text` on a session of its own, to the replicas in turn; the answer's status and id. */
    async send(text: string) {
      const replica = replicas[sent++ % replicas.length] as (typeof replicas)[number];
      const answer = await post(`${replica.url}/v1/messages`, {
        session_id: `s-${randomUUID()}`,
        user_id: 'u1',
        text,
        wait: false,
      });
      return { status: answer.status, id: answer.body?.id as string, retryAfter: answer.headers.get('retry-after') };
    },
    /** Until the replica has applied everything the primary wrote so far. */
    async replicaCaughtUp() {
      await eventually(async () => {
        const [written, applied] = await Promise.all([
          infoField(redis.primary.url, 'replication', 'master_repl_offset'),
          infoField(redis.replica.url, 'replication', 'master_repl_offset'),
        ]);
        return written !== undefined && written === applied;
      });
    },
    /** The replica stops taking the primary's writes (`SIGSTOP`): it lags from here on. */
    freezeReplica() {
      redis.replica.signal('SIGSTOP');
      frozen = true;
    },
    /** The primary dies (kill -9); its replica, thawed, takes over at the same address. */
    async failover() {
      await redis.primary.stop('SIGKILL');
      if (frozen) redis.replica.signal('SIGCONT');
      frozen = false;
      await redis.promoteReplica();
      proxy.retarget(redis.replica.port);
    },
    async statusOf(id: string): Promise<string | undefined> {
      for (const replica of replicas) {
        const answer = await get(`${replica.url}/v1/messages/${id}`).catch(() => undefined);
        if (answer?.status === 200) return answer.body?.status as string;
      }
      return undefined;
    },
    /** Until the pool holds nothing, waiting or running: nothing left in it can complete later. */
    async poolEmpty() {
      await eventually(async () => {
        const answer = await get(`${(replicas[0] as (typeof replicas)[number]).url}/admin/queues`).catch(
          () => undefined,
        );
        return answer?.status === 200 && answer.body.pending === 0 && answer.body.inflight === 0;
      }, 60_000, 'the pool empty');
    },
  };
}

type Fleet = Awaited<ReturnType<typeof replicatedFleet>>;

/** Sends `count` messages; every one must be acknowledged (202). */
async function acknowledged(fleet: Fleet, label: string, count: number) {
  const messages = [];
  for (let index = 0; index < count; index++) {
    const text = `${label} ${index}`;
    const answer = await fleet.send(text);
    expect(answer.status, `answer to ${text}`).toBe(202);
    messages.push({ text, id: answer.id });
  }
  return messages;
}

async function completed(fleet: Fleet, ids: readonly string[]) {
  for (const id of ids)
    await eventually(async () => (await fleet.statusOf(id)) === 'completed', 60_000, `${id} completed`);
}

describe.skipIf(!reachable)('a Redis failover under a fleet (kill -9 of the primary, its replica promoted)', () => {
  it('with wait_replicas: 0, loses the messages acknowledged while the replica lagged, and only those', {
    timeout: 120_000,
  }, async () => {
    const fleet = await replicatedFleet(0);
    const before = await acknowledged(fleet, 'before', 4);
    await eventually(() => fleet.calls.size === 4, 30_000, 'the first four running');
    await fleet.replicaCaughtUp();
    fleet.freezeReplica();
    const lagged = await acknowledged(fleet, 'lagged', 4);
    await eventually(() => fleet.calls.size === 8, 30_000, 'the lagged four running');
    await fleet.failover();
    fleet.release();

    await completed(
      fleet,
      before.map((message) => message.id),
    );
    await fleet.poolEmpty();
    await eventually(() => fleet.openCalls() === 0, 30_000, 'every backend call answered');
    const laggedStatuses = await Promise.all(lagged.map((message) => fleet.statusOf(message.id)));
    console.log(`wait_replicas 0: acknowledged while the replica lagged, after the failover: ${laggedStatuses.join(', ')}`);
    expect(laggedStatuses.filter((status) => status === 'completed')).toEqual([]);
  });

  it('with wait_replicas: 1, refuses (503) what the lagging replica does not hold and loses nothing acknowledged', {
    timeout: 120_000,
  }, async () => {
    const fleet = await replicatedFleet(1);
    const before = await acknowledged(fleet, 'before', 4);
    await eventually(() => fleet.calls.size === 4, 30_000, 'the first four running');
    fleet.freezeReplica();
    const refused = await Promise.all([0, 1, 2].map((index) => fleet.send(`refused ${index}`)));
    expect(refused.map((answer) => [answer.status, Number(answer.retryAfter) >= 1])).toEqual([
      [503, true],
      [503, true],
      [503, true],
    ]);
    await fleet.failover();
    fleet.release();
    const after = await acknowledged(fleet, 'after', 4);

    await completed(
      fleet,
      [...before, ...after].map((message) => message.id),
    );
    for (const { text } of [...before, ...after]) expect(fleet.calls.get(text), `calls for ${text}`).toBe(1);
  });

  it('with wait_replicas: 1, under load, completes every acknowledged message exactly once across the failover', {
    timeout: 180_000,
  }, async () => {
    const fleet = await replicatedFleet(1);
    fleet.release();
    const accepted: Array<{ text: string; id: string }> = [];
    let refusals = 0;
    let sending = true;
    const senders = [0, 1, 2, 3].map(async (sender) => {
      for (let index = 0; sending; index++) {
        const text = `load ${sender}.${index}`;
        const answer = await fleet.send(text).catch(() => undefined);
        if (answer?.status === 202) accepted.push({ text, id: answer.id });
        else refusals += 1;
      }
    });
    await eventually(() => accepted.length >= 100, 60_000, '100 acknowledged before the failover');
    const atFailover = accepted.length;
    await fleet.failover();
    await eventually(() => accepted.length >= atFailover + 100, 60_000, '100 acknowledged after the failover');
    sending = false;
    await Promise.all(senders);

    await completed(
      fleet,
      accepted.map((message) => message.id),
    );
    console.log(
      `wait_replicas 1 under load: ${accepted.length} acknowledged (${atFailover} before the failover), ${refusals} refused, all completed`,
    );
    for (const { text } of accepted) expect(fleet.calls.get(text), `calls for ${text}`).toBe(1);
  });
});
