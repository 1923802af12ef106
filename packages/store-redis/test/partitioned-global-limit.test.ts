import { randomUUID } from 'node:crypto';
import type { ClaimedTurn, Turn } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { command } from '@switchboard/testkit/redis';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createGlobalPermits, type GlobalPermits, permitKeysOf } from '../src/index.js';
import { redisClientFactory } from '../src/redis-connection.js';
import {
  REDIS_URL,
  keyInPartition,
  manualClock,
  queued,
  partitionTestConfig,
  redisReachable,
  removePoolKeys,
  usePartitionedPools,
} from './redis-harness.js';

const reachable = await redisReachable();
const HOLD = 'switchboard:global-permits/hold';

function heldInRedis(prefix: string): Promise<Record<string, string>> {
  return command(REDIS_URL, (client) => client.hgetall(permitKeysOf(prefix).keys[0] as string));
}

/** Connections a test can reach into (to fail or hold back a script's reply), as a pool's factory. */
function ownClients() {
  const clients: Redis[] = [];
  const createClient = () => {
    const client = new Redis(REDIS_URL, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
    });
    client.on('error', () => {});
    clients.push(client);
    return client;
  };
  return { clients, createClient };
}

/** Polls `condition` (real time, bounded): for a deadline on Redis' clock, never a sleep. */
const until = (condition: () => Promise<boolean>, what: string) => eventually(condition, 5_000, what);

/** Has `permits` take the whole limit of 2, a permit at a time as claims do, once Redis grants it. */
async function takeWholeLimit(permits: GlobalPermits, what: string): Promise<void> {
  let took = 0;
  await until(async () => {
    if ((await permits.acquire()) && permits.take()) took += 1;
    return took === 2;
  }, what);
}

describe.skipIf(!reachable)('global permits when calls race, fail or lapse', () => {
  const prefix = `sb-permit-races-${randomUUID()}`;
  const opened: GlobalPermits[] = [];
  const clients: Redis[] = [];
  afterEach(async () => {
    for (const permits of opened.splice(0)) await permits.close().catch(() => {});
    for (const client of clients.splice(0)) client.disconnect();
    await removePoolKeys(REDIS_URL, prefix);
  });

  async function holder(
    running: () => number,
    options: {
      client?: Redis;
      holdMs?: number;
      renewEveryMs?: number;
      fenceAfterMs?: number;
      onLapsed?: () => void;
    } = {},
  ) {
    const permits = await createGlobalPermits({
      url: options.client === undefined ? REDIS_URL : undefined,
      client: options.client,
      prefix,
      replicaId: randomUUID(),
      limit: 2,
      running,
      holdMs: options.holdMs ?? 15_000,
      renewEveryMs: options.renewEveryMs ?? 60_000,
      fenceAfterMs: options.fenceAfterMs ?? 10_000,
      onLapsed: options.onLapsed ?? (() => {}),
    });
    opened.push(permits);
    return permits;
  }

  /**
   * A replica whose turns running are `running`; `lapses` counts its turns given up (which sets
   * `running` back to 0).
   */
  async function lapsingHolder(options: Omit<NonNullable<Parameters<typeof holder>[1]>, 'onLapsed'>) {
    const state = { lapses: 0, running: 0 };
    const permits = await holder(() => state.running, {
      ...options,
      onLapsed: () => {
        state.lapses += 1;
        state.running = 0;
      },
    });
    return Object.assign(state, { permits });
  }

  /**
   * A replica's permits on a connection the test can cut, renewed every 50 ms and fenced after
   * 300 ms without one, its hold lapsing after 600 ms.
   */
  async function fencedHolder() {
    const client = new Redis(REDIS_URL, { lazyConnect: true });
    clients.push(client);
    const holding = await lapsingHolder({ client, holdMs: 600, renewEveryMs: 50, fenceAfterMs: 300 });
    return Object.assign(holding, { client });
  }

  it('counts on no permit that a give-back under way may return, so the fleet stays within the limit', async () => {
    const runningA = 0;
    const a = await holder(() => runningA);
    // A holds both permits and runs nothing now (two turns just ended).
    expect(await a.acquire()).toBe(true);
    expect(a.take()).toBe(true);
    expect(await a.acquire()).toBe(true);
    expect(a.take()).toBe(true);
    a.put();
    a.put();
    expect(a.held).toBe(2);
    // The give-back goes out (a settlement's `releasing`, or the timer's renewal) ...
    const giving = a.release();
    // ... and the claim loop, woken by the same settlement, may not count on one meanwhile.
    expect(a.take()).toBe(false);
    await giving;
    // B gets both permits: every turn running holds one.
    const b = await holder(() => 0);
    expect(await b.acquire()).toBe(true);
    expect(b.take()).toBe(true);
    expect(await b.acquire()).toBe(true);
    expect(b.take()).toBe(true);
    const inRedis = await heldInRedis(prefix);
    const total = Object.values(inRedis).reduce((sum, value) => sum + Number(value), 0);
    expect(runningA + 2, `redis holds ${JSON.stringify(inRedis)}`).toBeLessThanOrEqual(total);
  });

  it('gives the permits it holds unused to a replica left short, which is told when they come back', async () => {
    const a = await holder(() => 0);
    expect(await a.acquire()).toBe(true); // A keeps it for its next claim: the limit had room
    const b = await holder(() => 0);
    expect(await b.acquire()).toBe(true);
    expect(b.take()).toBe(true);
    let told = 0;
    b.onFreed(() => {
      told += 1;
    });
    expect(await b.acquire()).toBe(false); // short: it announces it
    await until(async () => told > 0, 'B is told that A gave its unused permit back');
    expect(a.held).toBe(0);
    expect(await b.acquire()).toBe(true);
  });

  it('counts a give-back whose reply was lost as applied', async () => {
    let runningA = 0;
    const client = new Redis(REDIS_URL, { lazyConnect: true });
    clients.push(client);
    const a = await holder(() => runningA, { client });
    expect(await a.acquire()).toBe(true);
    expect(a.take()).toBe(true);
    expect(await a.acquire()).toBe(true);
    expect(a.take()).toBe(true);
    a.put();
    a.put();
    // The next hold call is applied, but its reply is lost (a WAIT that timed out, a dropped connection).
    const commands = client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const real = commands[HOLD] as (...args: unknown[]) => Promise<unknown>;
    commands[HOLD] = async (...args: unknown[]) => {
      commands[HOLD] = real;
      await real.apply(client, args);
      throw new Error('Command timed out');
    };
    await a.release();
    expect(await heldInRedis(prefix)).toEqual({});
    // A counts none held: no claim goes ahead ...
    const tookA = [a.take(), a.take()].filter(Boolean).length;
    runningA = tookA;
    // ... while B is granted both.
    const b = await holder(() => 0);
    let tookB = 0;
    for (let index = 0; index < 2; index += 1) if ((await b.acquire()) && b.take()) tookB += 1;
    expect(tookA + tookB, `A took ${tookA}, B took ${tookB}`).toBeLessThanOrEqual(2);
  });

  it('gives up, at its next call, the turn that a claim under way when the lapse was found lands', async () => {
    let runningA = 0;
    let lapses = 0;
    const a = await holder(() => runningA, {
      holdMs: 300,
      onLapsed: () => {
        lapses += 1;
        runningA = 0;
      },
    });
    expect(await a.acquire()).toBe(true);
    expect(a.take()).toBe(true); // a claim is sent; A's hold lapses meanwhile (a stall, a failover)
    const b = await holder(() => 0);
    await takeWholeLimit(b, "B is granted A's lapsed permit");
    expect(await a.acquire()).toBe(false); // A's next call finds the lapse: its turns are given up
    expect(lapses).toBe(1);
    runningA = 1; // ... but the claim on its way answers a turn, which starts
    a.put();
    await a.acquire(); // the next call counts that turn in use: it lapses again
    await a.acquire();
    expect({ lapses, heldByA: a.held, runningA }).toEqual({ lapses: 2, heldByA: 0, runningA: 0 });
  });

  it('claims nothing once fenced (no renewal for fenceAfterMs) while its lapsed hold is taken by others', async () => {
    const fencing = await fencedHolder();
    const a = fencing.permits;
    expect(await a.acquire()).toBe(true);
    expect(a.take()).toBe(true);
    fencing.running = 1;
    a.put();
    // The permits' slot becomes unreachable (its shard fails over; the other partitions' shards answer).
    const commands = fencing.client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    commands[HOLD] = async () => {
      throw new Error('Connection is closed.');
    };
    await until(async () => fencing.lapses > 0, 'A gives up its turns, fenced');
    // The hold lapses in Redis (600 ms): B gets the whole limit.
    const b = await holder(() => 0);
    await takeWholeLimit(b, "B is granted A's lapsed permits");
    // A, fenced, must not claim: its permits are gone.
    expect(await a.acquire(), `A still believes it holds ${a.held}`).toBe(false);
  });

  /** What a failover of the permits' slot loses when the promoted replica had received none of the holds. */
  async function loseEveryHold(): Promise<void> {
    const [held, ...rest] = permitKeysOf(prefix).keys as [string, ...string[]];
    // The holds were there to lose (the test's replica holds one).
    expect(await command(REDIS_URL, (client) => client.del(held, ...rest))).toBeGreaterThan(0);
  }

  /** A replica running one turn on a permit it holds. */
  async function runningOne(renewEveryMs: number) {
    const holding = await lapsingHolder({ renewEveryMs });
    expect(await holding.permits.acquire()).toBe(true);
    expect(holding.permits.take()).toBe(true);
    holding.running = 1;
    holding.permits.put();
    return holding;
  }

  it('after a failover lost every hold, is granted its running turns again at its next renewal while the limit has room', async () => {
    const a = await runningOne(50);
    await loseEveryHold();
    await until(
      async () => Object.values(await heldInRedis(prefix)).join() === '1',
      "A's renewal holds its running turn's permit again",
    );
    expect({ lapses: a.lapses, running: a.running, held: a.permits.held }).toEqual({
      lapses: 0,
      running: 1,
      held: 1,
    });
  });

  it('after a failover lost every hold, gives its running turns up at its next call once others took the whole limit', async () => {
    const a = await runningOne(60_000);
    await loseEveryHold();
    const b = await holder(() => 0);
    await takeWholeLimit(b, 'B is granted the whole limit of 2, which the lost holds no longer count');
    // The fleet runs 3 under a limit of 2 until A's next call, a renewal at the latest.
    expect(await a.permits.acquire()).toBe(false);
    expect({ lapses: a.lapses, running: a.running }).toEqual({ lapses: 1, running: 0 });
  });

  it('gives up the turn a claim under way when it was fenced lands, while the permits stay unreachable', async () => {
    const fencing = await fencedHolder();
    const a = fencing.permits;
    expect(await a.acquire()).toBe(true);
    expect(a.take()).toBe(true); // a claim is sent to a partition's shard (reachable)
    // The permits' slot becomes unreachable (its primary fails over; cluster-node-timeout > fenceAfterMs).
    const commands = fencing.client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    commands[HOLD] = async () => {
      throw new Error('Connection is closed.');
    };
    await until(async () => a.held === 0, 'A is fenced (no turn running then: nothing to give up)');
    // The claim under way answers a turn: it starts, with no permit.
    fencing.running = 1;
    a.put();
    // The hold lapses in Redis (600 ms): B is granted the whole limit of 2.
    const b = await holder(() => 0);
    await takeWholeLimit(b, "B is granted A's lapsed permits");
    // A's renewals go on failing: its landed turn is given up, or the fleet would run 3 under a limit of 2.
    await until(async () => fencing.lapses === 1, 'A gives up the turn that landed while it was fenced');
    expect({ lapses: fencing.lapses, running: fencing.running }).toEqual({ lapses: 1, running: 0 });
  });
});

describe.skipIf(!reachable)('partitioned pool under a full limit and failing partitions', () => {
  const PARTITIONS = 3;
  const pools = usePartitionedPools({ tag: 'sb-partition-races', partitions: PARTITIONS, global: 1 });

  const sessionIn = (index: number, tag: string) => keyInPartition(index, PARTITIONS, tag);

  it('counts no permit for a settlement claiming in its step once its ending turn is given up', async () => {
    const clock = manualClock();
    // Connections in the order made: the permits', then each partition's commands and subscriber.
    const made: Redis[] = [];
    const factory = redisClientFactory(REDIS_URL);
    const pool = await pools.open({
      url: undefined,
      createClient: (role) => {
        const client = factory(role) as Redis;
        made.push(client);
        return client;
      },
      now: clock.now,
      concurrency: { global: 2, perSession: 1 },
    });
    // Partition 2's commands answer late from now on (a slow shard, a WAIT): A's settlement is under way a while.
    let delaying = false;
    const slow = made[5] as Redis & { sendCommand(command: { promise: Promise<unknown> }): Promise<unknown> };
    const send = slow.sendCommand.bind(slow);
    slow.sendCommand = (command) => {
      if (!delaying) return send(command);
      setTimeout(() => void send(command), 300);
      return command.promise;
    };
    const [a, b, c, d] = [sessionIn(2, 'a'), sessionIn(1, 'b'), sessionIn(0, 'c'), sessionIn(1, 'd')];
    await pool.enqueue(queued(a, clock.now()));
    await pool.enqueue(queued(a, clock.now()));
    const turnA = (await pool.claim()) as Turn; // partition 2: the cursor goes to 0
    expect(turnA.session).toBe(a);
    await pool.enqueue(queued(b, clock.now()));
    const turnB = (await pool.claim()) as Turn; // partition 1: the cursor goes to 2, A's partition
    expect(turnB.session).toBe(b);
    await pool.enqueue(queued(c, clock.now()));
    await pool.enqueue(queued(d, clock.now()));
    // A settles claiming its next turn in the step (its partition's turn) ...
    const inStep: Turn[] = [];
    delaying = true;
    const settling = pool.complete(turnA, undefined, { claimNext: (turn) => void inStep.push(turn) });
    // ... while this replica gives its turns up (its permits lapsed, or its leases were fenced).
    pool.giveUpTurns();
    // The claim loop runs meanwhile (two slots of its claim concurrency).
    const claimed = (await Promise.all([pool.claim(), pool.claim()])).filter(
      (turn): turn is ClaimedTurn => turn !== null,
    );
    expect(await settling).toBe('settled');
    // Turns this replica runs now, under a global limit of 2 (its permits).
    const state = {
      running: pool.heldTurns,
      inStep: inStep.map((turn) => turn.session),
      claimed: claimed.map((turn) => turn.session),
    };
    expect(state.running, JSON.stringify(state)).toBeLessThanOrEqual(2);
  });

  it("gives a slot freed under a full limit to the next partition's older head, not back to a partition with a backlog", async () => {
    const clock = manualClock();
    const pool = await pools.open({ now: clock.now });
    const a = sessionIn(0, 'a');
    const b = sessionIn(1, 'b');
    await pool.enqueue(queued(a, clock.now()));
    let turn = (await pool.claim()) as Turn;
    expect(turn.session).toBe(a);
    clock.advance(10);
    await pool.enqueue(queued(b, clock.now())); // b waits from now on: the oldest head
    // Session a keeps getting messages, each younger than b's.
    const order: string[] = [];
    for (let round = 0; round < 5; round += 1) {
      clock.advance(10);
      await pool.enqueue(queued(a, clock.now()));
      let next: ClaimedTurn | undefined;
      await pool.complete(turn, [], { claimNext: (claimed) => (next = claimed) });
      if (next === undefined) next = (await pool.claim()) ?? undefined;
      expect(next).toBeDefined();
      turn = next as Turn;
      order.push(turn.session === a ? 'a' : 'b');
    }
    expect(order[0], `turns after b arrived: ${order.join(',')}`).toBe('b');
  });

  it('enforces a lowered global limit as turns end, settlements claiming in their step included', async () => {
    const clock = manualClock();
    const pool = await pools.open({ now: clock.now, ...partitionTestConfig(3) });
    const sessions = [sessionIn(0, 'x'), sessionIn(1, 'y'), sessionIn(2, 'z')];
    for (const session of sessions)
      for (let n = 0; n < 4; n += 1) await pool.enqueue(queued(session, clock.now()));
    let running: Turn[] = [];
    for (let n = 0; n < 3; n += 1) running.push((await pool.claim()) as Turn);
    expect(running.every((turn) => turn !== null)).toBe(true);
    await pool.reconfigure(partitionTestConfig(1)); // the operator lowers the limit to 1
    for (let round = 0; round < 3; round += 1) {
      const next: Turn[] = [];
      for (const turn of running)
        await pool.complete(turn, [], { claimNext: (claimed) => void next.push(claimed) });
      running = next;
    }
    expect(running.length).toBeLessThanOrEqual(1);
  });

  it('runs no claim on the permit its settlement is giving back to the other replicas', async () => {
    const { clients, createClient } = ownClients();
    const a = await pools.open({
      url: undefined,
      createClient,
    });
    const b = await pools.open();
    // A's give-back is applied and its reply held back (a WAIT for a replica, a loaded primary).
    const permitClient = clients[0] as Redis;
    const commands = permitClient as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const real = commands[HOLD] as (...args: unknown[]) => Promise<unknown>;
    for (const session of [sessionIn(0, 's'), sessionIn(1, 's'), sessionIn(2, 's')])
      await a.enqueue(queued(session, Date.now()));
    const first = (await a.claim()) as Turn;
    expect(first).not.toBeNull();
    let replyGoes = () => {};
    let holdSent = () => {};
    const sent = new Promise<void>((resolve) => {
      holdSent = resolve;
    });
    commands[HOLD] = async (...args: unknown[]) => {
      const reply = await real.apply(permitClient, args);
      holdSent();
      await new Promise<void>((resolve) => {
        replyGoes = resolve;
      });
      return reply;
    };
    const completing = a.complete(first); // no next turn in its step: its permit goes back
    await sent; // applied by Redis, its reply not back yet
    commands[HOLD] = real;
    const claiming = a.claim(); // the claim loop, woken by the settlement
    replyGoes();
    await completing;
    const second = await claiming;
    const third = await b.claim();
    // Two sessions wait and the limit is 1: exactly one of the two claims runs a turn.
    expect([second, third].filter((turn) => turn !== null)).toHaveLength(1);
  });

  it("claims from the other partitions while one partition's claims fail", async () => {
    const clock = manualClock();
    const { clients, createClient } = ownClients();
    const pool = await pools.open({
      url: undefined,
      createClient,
      now: clock.now,
      concurrency: { global: 5, perSession: 1 },
    });
    const healthy = sessionIn(2, 'h');
    await pool.enqueue(queued(healthy, clock.now()));
    // Partition 1's slot fails (its shard is down); partition 0's (with the permits) and 2's answer.
    for (const client of clients) {
      const commands = client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
      const real = commands['switchboard:pool/claim'];
      if (real === undefined) continue;
      commands['switchboard:pool/claim'] = (...args: unknown[]) =>
        args.includes(`{${pools.prefix}#1}:`)
          ? Promise.reject(new Error('CLUSTERDOWN'))
          : real.apply(client, args);
    }
    const answers: string[] = [];
    for (let attempt = 0; attempt < 3; attempt += 1) {
      answers.push(
        await pool.claim().then(
          (turn) => (turn === null ? 'null' : turn.session),
          (err: unknown) => `failed: ${(err as Error).message}`,
        ),
      );
      if (answers.at(-1) === healthy) break;
    }
    expect(answers, answers.join(' / ')).toContain(healthy);
  });
});
