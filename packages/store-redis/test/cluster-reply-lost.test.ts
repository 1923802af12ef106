import { isSwitchboardError } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { command, startPrivateCluster } from '@switchboard/testkit/redis';
import { startTcpProxy } from '@switchboard/testkit/tcp-proxy';
import calculateSlot from 'cluster-key-slot';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, createRedisClient, mayHaveRun, primaryOf, storeFailure } from '../src/redis-connection.js';
import { createRedisReplicaEvents, eventChannelOf } from '../src/redis-replica-events.js';
import { recordingLogger } from './redis-harness.js';

const PREFIX = 'sb-cluster-reply-lost';
const COUNTER = `{${PREFIX}}:runs`;
const INCR = "return redis.call('INCR', KEYS[1])";

/*
 * The cluster client of `store.cluster` sends a command again only when Redis did not run it:
 * the store's callers repeat a call that may have run with a repeat flag of their own.
 */

/** The port the node at `url` names for the primary of `slot`. */
async function advertisedPort(url: string, slot: number): Promise<number | undefined> {
  const ranges = await command(url, (node) => node.cluster('SLOTS')).catch(() => []);
  return ranges.find(([start, end]) => start <= slot && slot <= end)?.[2]?.[1];
}

/**
 * The store's cluster client, whose connection to the primary of the test's slot runs through a
 * proxy: that primary advertises the proxy's port, so the slot map sends the client there.
 */
let cluster: Awaited<ReturnType<typeof startPrivateCluster>>;
let proxy: Awaited<ReturnType<typeof startTcpProxy>>;
let holder: Redis;
let client: Cluster;
beforeAll(async () => {
  cluster = await startPrivateCluster(3);
  const slot = calculateSlot(`{${PREFIX}}`);
  const port = await advertisedPort(cluster.urls[0] as string, slot);
  const node = cluster.nodes.find((each) => each.port === port);
  if (node === undefined) throw new Error(`no node holds slot ${slot}`);
  holder = new Redis(node.url);
  proxy = await startTcpProxy(node.port);
  await holder.config('SET', 'cluster-announce-bus-port', String(node.port + 10_000));
  await holder.config('SET', 'cluster-announce-port', String(proxy.port));
  await eventually(async () => {
    const ports = await Promise.all(cluster.urls.map((url) => advertisedPort(url, slot)));
    return ports.every((each) => each === proxy.port);
  }, 10_000);
  const created = createRedisClient(cluster.urls);
  if (!(created instanceof Cluster)) throw new Error('seed URLs must make a cluster client');
  client = created;
  client.on('error', () => {});
  await connect(client, 250);
}, 60_000);
afterAll(async () => {
  client?.disconnect();
  holder?.disconnect();
  await proxy?.close();
  await cluster?.remove();
});

describe("the store's Redis Cluster client", () => {
  it('runs a script whose reply is lost once, and its caller gets a failure that may have run', async () => {
    expect(primaryOf(client, PREFIX).options.port).toBe(proxy.port);
    // Through the client, so that its connection to the slot's primary is up before the hold.
    await client.del(COUNTER);
    proxy.hold();
    const call = client.eval(INCR, 1, COUNTER).then(
      (reply) => ({ reply }),
      (err: unknown) => ({ err }),
    );
    // Redis ran it; its reply waits in the proxy, and is lost with the connection.
    await eventually(async () => (await holder.get(COUNTER)) === '1');
    proxy.cut();
    const outcome = await call;
    expect(outcome).toHaveProperty('err');
    const failure = storeFailure((outcome as { err: unknown }).err, 250);
    expect(isSwitchboardError(failure, 'SB_STORE_UNAVAILABLE')).toBe(true);
    expect(mayHaveRun(failure)).toBe(true);
    expect(await holder.get(COUNTER)).toBe('1');
    // The client reconnects by itself; the next call runs once more.
    await eventually(async () => (await client.eval(INCR, 1, COUNTER).catch(() => null)) === 2);
    expect(await holder.get(COUNTER)).toBe('2');
  });

  it("sends again the commands refused while their nodes' connections were coming up, each run once", async () => {
    const fresh = createRedisClient(cluster.urls);
    fresh.on('error', () => {});
    try {
      await connect(fresh, 250);
      // Keys of many slots, so of every primary, sent at once on connections not yet made.
      const keys = Array.from({ length: 30 }, (_, index) => `{sb-cluster-fresh-${index}}:runs`);
      expect(await Promise.all(keys.map((key) => fresh.eval(INCR, 1, key)))).toEqual(keys.map(() => 1));
    } finally {
      fresh.disconnect();
    }
  });

  it('follows a slot that moved to another primary: the command, refused there, runs once', async () => {
    const ids = await Promise.all(
      cluster.nodes.map((node) => command(node.url, async (each) => String(await each.cluster('MYID')))),
    );
    // A slot of a primary the client reaches directly, moved to another such primary.
    let tag = '';
    let slot = 0;
    let from = -1;
    for (let n = 0; from < 0 || cluster.nodes[from]?.port === holder.options.port; n++) {
      tag = `sb-cluster-moved-${n}`;
      slot = calculateSlot(`{${tag}}`);
      const port = await advertisedPort(cluster.urls[0] as string, slot);
      from = cluster.nodes.findIndex((node) => node.port === port);
    }
    const to = cluster.nodes.findIndex((node, index) => index !== from && node.port !== holder.options.port);
    const source = cluster.nodes[from] as (typeof cluster.nodes)[number];
    const target = cluster.nodes[to] as (typeof cluster.nodes)[number];
    const key = `{${tag}}:runs`;
    await client.get(key);
    expect(client.slots[slot]?.[0]).toBe(`127.0.0.1:${source.port}`);

    const run = (url: string, ...args: string[]) => command(url, (node) => node.call('CLUSTER', ...args));
    await run(target.url, 'SETSLOT', String(slot), 'IMPORTING', ids[from] as string);
    await run(source.url, 'SETSLOT', String(slot), 'MIGRATING', ids[to] as string);
    for (const node of [
      target,
      source,
      ...cluster.nodes.filter((each) => each !== source && each !== target),
    ])
      await run(node.url, 'SETSLOT', String(slot), 'NODE', ids[to] as string);

    expect(await client.eval(INCR, 1, key)).toBe(1);
    expect(client.slots[slot]?.[0]).toBe(`127.0.0.1:${target.port}`);
    expect(await command(target.url, (node) => node.get(key))).toBe('1');
  });

  it("relays events again once the slot's primary is back from an outage longer than a reconnect", {
    timeout: 30_000,
  }, async () => {
    const logger = recordingLogger();
    const events = await createRedisReplicaEvents({
      url: cluster.urls,
      prefix: PREFIX,
      replicaId: 'replica-a',
      logger,
    });
    // Pub/sub reaches every node: one the proxy does not stand in front of hears every event.
    const other = cluster.nodes.find((node) => node.port !== holder.options.port);
    const listener = new Redis(other?.url as string);
    const heard = new Set<string>();
    listener.on('message', (_channel: string, text: string) => heard.add(JSON.parse(text).turn.id));
    const failures = () =>
      logger.lines.filter((line) => line.message.startsWith('event relay failed')).length;
    let sent = 0;
    /** Relays a turn start to replica-b: whether replica-b's channel heard it (false once it failed). */
    const relayed = async (): Promise<boolean> => {
      const id = `turn-${++sent}`;
      const before = failures();
      events.publishTurnStart('replica-b', { id, pipeline: 'p', messages: [] });
      await eventually(() => heard.has(id) || failures() > before, 5000, `turn ${id} heard or failed`);
      return heard.has(id);
    };
    try {
      await listener.subscribe(eventChannelOf(PREFIX, 'replica-b'));
      expect(await relayed()).toBe(true);

      // The primary restarts: its node connection, tried once more at once, ends.
      await proxy.refuse();
      const away = Date.now();
      await eventually(async () => !(await relayed()), 5000, 'a relay fails while the primary is away');
      // The length of the outage (not a condition): a few seconds, as a node's restart takes.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 3000 - (Date.now() - away))));
      expect(await relayed()).toBe(false);
      await proxy.accept();

      await eventually(relayed, 15_000, 'a relay is heard again after the primary is back');
    } finally {
      listener.disconnect();
      await events.close();
    }
  });
});
