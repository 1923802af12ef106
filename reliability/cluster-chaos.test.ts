import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { postgresReachable } from '@switchboard/testkit/postgres';
import { redisReachable, startPrivateCluster } from '@switchboard/testkit/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ServeProcess,
  eventually,
  resolvesWithin,
  startServe,
  tempDir,
  writeConfig,
} from '../apps/gateway/test/serve-process.js';
import { newStores, removeStores, storesConfig } from '../apps/gateway/test/shared-stores.js';
import { type BackendCall, type ClusterBackend, startClusterBackend } from './support/cluster-backend.js';
import { profile, recordFigures } from './support/figures.js';
import { type SeededRandom, deriveSeed, runSeed, seededRandom } from './support/seeded-random.js';

/**
 * Cluster chaos (docs/RELIABILITY.md): three `switchboard serve` replicas on one Redis pool and
 * one PostgreSQL schema, an `http` pipeline backend that records every call, a cluster limit of
 * four turns, and steady traffic over many sessions while a random replica is SIGKILLed and
 * restarted every 15 s and every replica is once stopped gracefully and restarted in turn. A
 * client whose request fails or whose answer is lost sends the same body with the same
 * `Idempotency-Key` to another replica, as a client behind a load balancer does. Every message
 * carries a marker (`s<session>#<seq>`) and its marker is its key.
 *
 * Each kill aims at a moment where something is at stake on the victim, drawn from the seed:
 * while it runs a turn, just after the backend answered one of its turns (0–30 ms: between the
 * answer, the settlement in Redis and the outcome's records), or while it holds a client's
 * request open. When nothing of the kind comes within 3 s, it kills anyway.
 */

const reachable = (await redisReachable()) && (await postgresReachable());

const SEED = runSeed();
const REPLICAS = 3;
/** The cluster's `concurrency.pipeline`: turns in flight across all replicas, checked at the backend. */
const CLUSTER_LIMIT = 4;
/** How long the clients send; the short form is what CI runs. */
const LOAD_MS = profile === 'full' ? 30 * 60_000 : 75_000;
/**
 * Messages a second, each to a session drawn from those whose previous message was accepted
 * (a session's messages are sent one after the other, so their order is the order sent).
 */
const RATE_PER_S = 25;
const SESSIONS = 60;
/** Share of messages sent with `wait: true`: their answers are held open, and a kill loses them. */
const WAITING_SHARE = 0.3;
const WAIT_TIMEOUT_MS = 3_000;
const KILL_EVERY_MS = 15_000;
/** When the rolling restarts begin (one in the short form, one per 10 minutes in the full one). */
const ROLLING_RESTARTS_AT_MS = profile === 'full' ? [307_000, 907_000, 1_507_000] : [37_000];
/**
 * Backend answer delay: long enough that turns overlap, short against the turn timeout, and
 * short enough that four turns at once keep up with the load on a loaded two-core machine
 * (where a turn holds its slot for about as long again outside the backend).
 */
const BACKEND_DELAY_MS = { min: 20, max: 60 };
/**
 * Bounds: how long a client keeps retrying one message after the load stopped; how long the
 * drain after that may go without a message completing (a killed replica's turns come back once
 * their 15 s lease expires, its claimed replies once their 17 s lease does), and in all (a
 * machine too loaded to keep up leaves a backlog that drains slowly but steadily); one start.
 */
const DELIVER_GRACE_MS = 60_000;
const DRAIN_STALL_MS = 60_000;
const DRAIN_BOUND_MS = Math.max(600_000, LOAD_MS);
/** How long replicas may read a completed message otherwise: a status write under way. */
const AGREE_BOUND_MS = 10_000;
/** The checks after the drain: every message read on every replica, every key sent again. */
const CHECKS_BOUND_MS = AGREE_BOUND_MS + (profile === 'full' ? 900_000 : 180_000);
const READY_BOUND_MS = 60_000;
/** How long a kill waits for its moment (a turn running, answered, a request open) on the victim. */
const AIM_BOUND_MS = 3_000;
const KILL_AIMS = ['turn running', 'turn answered', 'request open'] as const;
type KillAim = (typeof KILL_AIMS)[number];
const API_KEY = `sk-chaos-${randomBytes(12).toString('hex')}`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const markerPattern = /^(s\d+)#(\d+)$/;

/** One replica's place behind the load balancer: the process of the moment, replaced on restart. */
interface Slot {
  index: number;
  dir: string;
  configPath: string;
  current: ServeProcess;
}

/** The three replicas: started, killed, stopped and restarted only through here. */
class Fleet {
  readonly slots: Slot[] = [];
  readonly started: Array<{ slot: number; gateway: ServeProcess }> = [];
  /** Processes this scenario signalled: their exits are expected. */
  private readonly signalled = new Set<ServeProcess>();
  readonly unexpectedExits: string[] = [];
  readonly gracefulExitCodes: Array<number | null> = [];
  kills = 0;
  gracefulRestarts = 0;

  /** Client requests open on each replica: a kill then cuts their answers. */
  readonly openRequests = Array.from({ length: REPLICAS }, () => 0);

  async add(yaml: string): Promise<void> {
    const dir = tempDir();
    const slot = { index: this.slots.length, dir, configPath: writeConfig(dir, yaml) } as Slot;
    slot.current = await this.launch(slot);
    this.slots.push(slot);
  }

  private async launch(slot: Slot): Promise<ServeProcess> {
    const gateway = await startServe({
      dir: slot.dir,
      configPath: slot.configPath,
      env: { LOG_LEVEL: 'info' },
    });
    this.started.push({ slot: slot.index, gateway });
    void gateway.exited.then((code) => {
      if (!this.signalled.has(gateway))
        this.unexpectedExits.push(`replica ${slot.index} pid ${gateway.child.pid} exited ${code}`);
    });
    await eventually(
      async () => (await fetch(`${gateway.url}/readyz`).catch(() => undefined))?.status === 200,
      READY_BOUND_MS,
      `replica ${slot.index} ready`,
    );
    return gateway;
  }

  /** SIGKILL, then a start on the same config; resolves once the new process is ready. */
  async kill(index: number): Promise<void> {
    const slot = this.slots[index] as Slot;
    const victim = slot.current;
    this.signalled.add(victim);
    victim.child.kill('SIGKILL');
    await resolvesWithin(victim.exited, 10_000, `replica ${index} exit after SIGKILL`);
    this.kills += 1;
    // Until the new process listens, requests routed here are refused: the clients go elsewhere.
    slot.current = await this.launch(slot);
  }

  /** Each replica in turn: SIGTERM, its drain and exit, a start, ready before the next one. */
  async rollingRestart(): Promise<void> {
    for (const slot of this.slots) {
      const old = slot.current;
      this.signalled.add(old);
      // While it drains it answers 503, and clients retry elsewhere.
      old.child.kill('SIGTERM');
      this.gracefulExitCodes.push(
        await resolvesWithin(old.exited, 30_000, `replica ${slot.index} exit after SIGTERM`),
      );
      this.gracefulRestarts += 1;
      slot.current = await this.launch(slot);
    }
  }

  async stopAll(): Promise<void> {
    await Promise.all(
      this.started.map(({ gateway }) => {
        this.signalled.add(gateway);
        return gateway.child.exitCode === null && gateway.child.signalCode === null
          ? gateway.stop('SIGKILL')
          : undefined;
      }),
    );
  }
}

/** What the clients saw of one message (its marker is its `Idempotency-Key`). */
interface Sent {
  marker: string;
  /** The request body, the same on every try. */
  body: string;
  /** Gateway ids the answers named: exactly one when deduplication holds. */
  ids: Set<string>;
  /** The replica whose answer the client got first. */
  acceptedBy?: number;
  tries: number;
}

interface ClientLedger {
  sent: Map<string, Sent>;
  retries: number;
  /** Requests no replica took: it was not listening (killed, or starting again). */
  refusedConnections: number;
  /** Requests whose answer never came: the connection was cut (a kill) or timed out. */
  lostAnswers: number;
  /**
   * Messages accepted on a retry under an id made before that retry was sent: the replica whose
   * answer was lost had bound the key (and maybe queued the message) before it died.
   */
  boundBeforeRetry: number;
  refused: number;
  serverErrors: string[];
  otherAnswers: string[];
}

// On one pool, and with the sessions spread over partitions (docs/design.md §5 "Partitions") on
// a Redis Cluster of three primaries: the cluster limit is then the one global limit the
// partitions share.
describe.skipIf(!reachable).each([
  { pool: 'one pool', partitions: undefined, onCluster: false },
  { pool: 'four partitions on a Redis Cluster', partitions: 4, onCluster: true },
])('cluster chaos: three replicas, SIGKILLs and a rolling restart ($pool)', ({ partitions, onCluster }) => {
  const stores = newStores({ partitions });
  let redisCluster: Awaited<ReturnType<typeof startPrivateCluster>> | undefined;
  beforeAll(async () => {
    if (!onCluster) return;
    redisCluster = await startPrivateCluster(3);
    stores.cluster = redisCluster.urls;
  }, 60_000);
  const fleet = new Fleet();
  let backend: ClusterBackend | undefined;

  afterAll(async () => {
    await fleet.stopAll();
    await backend?.close();
    await removeStores(stores);
    await redisCluster?.remove();
  });

  it('loses no message, keeps each session in order and the cluster limit, one id per key, completed on every replica', {
    timeout: LOAD_MS + DELIVER_GRACE_MS + DRAIN_BOUND_MS + CHECKS_BOUND_MS,
  }, async () => {
    process.stdout.write(`cluster chaos: seed ${SEED} (RELIABILITY_SEED=${SEED} replays it)\n`);
    const bot = await startClusterBackend({ replicas: REPLICAS, seed: SEED, delayMs: BACKEND_DELAY_MS });
    backend = bot;
    const { calls } = bot;

    // The replicas differ only in their backend's URL, which replicas may (docs/design.md §5).
    const yaml = (index: number) =>
      storesConfig(
        stores,
        `concurrency: { pipeline: ${CLUSTER_LIMIT} }
shutdown: { drain_timeout: 10s }
channels:
  - { id: api, type: openapi, api_keys: ["${API_KEY}"], outbound: { send_timeout: 2s } }
pipelines:
  - { id: bot, type: http, url: "${bot.urlFor(index)}", timeout: 10s }
routing: { default: bot }
`,
      );
    // One after the other: the first migrates the schema and registers the fleet's limits.
    for (let index = 0; index < REPLICAS; index++) await fleet.add(yaml(index));

    const ledger: ClientLedger = {
      sent: new Map(),
      retries: 0,
      refusedConnections: 0,
      lostAnswers: 0,
      boundBeforeRetry: 0,
      refused: 0,
      serverErrors: [],
      otherAnswers: [],
    };
    const startedAt = Date.now();
    const loadEnd = startedAt + LOAD_MS;

    /**
     * Sends one message until a replica accepts it: a connection error (the replica was killed,
     * or is not listening yet) or a 503/429 sends the same body and key to another replica.
     */
    async function deliver(session: number, seq: number, random: SeededRandom): Promise<void> {
      const marker = `s${session}#${seq}`;
      const wait = random.next() < WAITING_SHARE;
      const body = JSON.stringify({
        session_id: `s${session}`,
        user_id: `u${session}`,
        text: marker,
        wait,
        ...(wait ? { timeout_ms: WAIT_TIMEOUT_MS } : {}),
      });
      const sent: Sent = { marker, body, ids: new Set(), tries: 0 };
      ledger.sent.set(marker, sent);
      let slot = random.between(0, REPLICAS - 1);
      while (Date.now() < loadEnd + DELIVER_GRACE_MS) {
        if (sent.tries > 0) {
          ledger.retries += 1;
          slot = (slot + random.between(1, REPLICAS - 1)) % REPLICAS;
          // Every replica tried once: back off a little before the next round.
          if (sent.tries % REPLICAS === 0) await sleep(250);
        }
        sent.tries += 1;
        fleet.openRequests[slot] = (fleet.openRequests[slot] ?? 0) + 1;
        const triedAt = Date.now();
        const answer = await postMessage((fleet.slots[slot] as Slot).current.url, sent).finally(() => {
          fleet.openRequests[slot] = (fleet.openRequests[slot] ?? 1) - 1;
        });
        if (answer instanceof Error) {
          if (answer.cause?.code === 'ECONNREFUSED') ledger.refusedConnections += 1;
          else ledger.lostAnswers += 1;
          continue;
        }
        const id = idOf(answer);
        if (id !== undefined) {
          if (sent.tries > 1 && ulidTime(id) < triedAt) ledger.boundBeforeRetry += 1;
          sent.ids.add(id);
          sent.acceptedBy ??= slot;
          return;
        }
        if (answer.status === 503 || answer.status === 429) {
          ledger.refused += 1;
          continue;
        }
        // A wrong answer to a valid request: counted, and the message given up.
        const what = `${marker} on replica ${slot}: ${answer.status} ${JSON.stringify(answer.body)}`;
        if (answer.status >= 500) ledger.serverErrors.push(what);
        else ledger.otherAnswers.push(what);
        return;
      }
    }

    /** 25 messages a second until the load ends, each to a session with none being sent. */
    async function load(): Promise<void> {
      const random = seededRandom(deriveSeed(SEED, 'load'));
      const sending = new Set<number>();
      const nextSeq = Array.from({ length: SESSIONS }, () => 0);
      const deliveries: Array<Promise<void>> = [];
      for (let tick = 0; ; tick++) {
        // The pace of the load: each message waits its moment.
        await sleep(Math.max(0, startedAt + (tick * 1000) / RATE_PER_S - Date.now()));
        if (Date.now() >= loadEnd) break;
        const free = Array.from({ length: SESSIONS }, (_, session) => session).filter(
          (session) => !sending.has(session),
        );
        if (free.length === 0) continue;
        const session = free[random.between(0, free.length - 1)] as number;
        const seq = nextSeq[session] ?? 0;
        nextSeq[session] = seq + 1;
        sending.add(session);
        const ofMessage = seededRandom(deriveSeed(SEED, 'message', session, seq));
        deliveries.push(deliver(session, seq, ofMessage).finally(() => sending.delete(session)));
      }
      await Promise.all(deliveries);
    }

    /** Waits (at most 3 s) for the moment `aim` on `victim`; whether it came. */
    async function aimAt(victim: number, aim: KillAim, afterAnswerMs: number): Promise<boolean> {
      if (aim === 'turn answered') {
        const answered = await resolvesWithin(bot.nextAnswerOn(victim), AIM_BOUND_MS, 'an answer').then(
          () => true,
          () => false,
        );
        if (answered) await sleep(afterAnswerMs);
        return answered;
      }
      const check =
        aim === 'turn running'
          ? () => bot.runningOn(victim) > 0
          : () => (fleet.openRequests[victim] ?? 0) > 0;
      return eventually(check, AIM_BOUND_MS, aim).then(
        () => true,
        () => false,
      );
    }

    const killAims = new Map<string, number>();
    /** Each kill: when (ms after the load began), which replica, aimed at what. */
    const killTimeline: string[] = [];
    /** A SIGKILL of a random replica every 15 s, and the rolling restarts, one at a time. */
    async function chaos(): Promise<void> {
      const random = seededRandom(deriveSeed(SEED, 'chaos'));
      const events = [
        ...Array.from({ length: Math.ceil(LOAD_MS / KILL_EVERY_MS) - 1 }, (_, k) => ({
          at: (k + 1) * KILL_EVERY_MS,
          kind: 'kill' as const,
        })),
        ...ROLLING_RESTARTS_AT_MS.map((at) => ({ at, kind: 'rolling' as const })),
      ].sort((a, b) => a.at - b.at);
      for (const event of events) {
        // The schedule of the scenario: an event waits its time, or for the previous one to end.
        await sleep(Math.max(0, startedAt + event.at - Date.now()));
        if (event.kind === 'kill') {
          const victim = random.between(0, REPLICAS - 1);
          const aim = KILL_AIMS[random.between(0, KILL_AIMS.length - 1)] as KillAim;
          killAims.set(aim, (killAims.get(aim) ?? 0) + 1);
          const found = await aimAt(victim, aim, random.between(0, 30));
          if (!found) killAims.set('nothing found', (killAims.get('nothing found') ?? 0) + 1);
          killTimeline.push(
            `replica ${victim} at +${Date.now() - startedAt} ms (${found ? aim : 'nothing found'})`,
          );
          await fleet.kill(victim);
        } else await fleet.rollingRestart();
      }
    }

    await Promise.all([chaos(), load()]);
    const loadStoppedAt = Date.now();

    // Drained: every accepted message reads completed, asked of a replica other than the one
    // that accepted it; bounded, since a message the cluster lost never gets there: the drain
    // ends once a minute passed without one more completing.
    const accepted = [...ledger.sent.values()].filter((sent) => sent.ids.size > 0);
    const lastStatus = new Map<string, string>();
    let pending = accepted.flatMap((sent) => [...sent.ids].map((id) => ({ sent, id })));
    const drainDeadline = Date.now() + DRAIN_BOUND_MS;
    let progressAt = Date.now();
    /** Messages not yet completed when the load stopped: a machine that cannot keep up has many. */
    let backlogAtLoadEnd = 0;
    let lastSummary = '';
    for (
      let round = 1;
      pending.length > 0 && Date.now() < drainDeadline && Date.now() - progressAt < DRAIN_STALL_MS;
      round++
    ) {
      const stillPending: typeof pending = [];
      await inBatches(pending, 16, async (entry) => {
        const other = ((entry.sent.acceptedBy ?? 0) + round) % REPLICAS;
        const reader = other === entry.sent.acceptedBy ? (other + 1) % REPLICAS : other;
        const status = await statusOf((fleet.slots[reader] as Slot).current.url, entry.id);
        lastStatus.set(entry.id, status);
        if (status !== 'completed') stillPending.push(entry);
      });
      if (stillPending.length < pending.length) progressAt = Date.now();
      if (round === 1) backlogAtLoadEnd = stillPending.length;
      pending = stillPending;
      const summary = describePending(pending, lastStatus);
      if (summary !== lastSummary)
        process.stdout.write(`cluster chaos: +${Date.now() - loadStoppedAt} ms after the load: ${summary}\n`);
      lastSummary = summary;
      // Between polling rounds: the condition is read again on every round.
      if (pending.length > 0) await sleep(500);
    }
    const drainedInMs = Date.now() - loadStoppedAt;

    // Completed on every replica, not only on the one that answered the drain. The drain read
    // each final from the store (or from the memory of the replica whose write of it was under
    // way): every replica reads it so within moments. Each round reads every message on every
    // replica again, until one finds no disagreement.
    const completed = accepted.flatMap((sent) =>
      [...sent.ids].filter((id) => lastStatus.get(id) === 'completed').map((id) => ({ sent, id })),
    );
    const reads = fleet.slots.flatMap((slot) => completed.map((each) => ({ ...each, slot })));
    const agreeDeadline = Date.now() + AGREE_BOUND_MS;
    let disagreements: Array<{ id: string; status: string; replica: number; sent: Sent }> = [];
    let agreementRounds = 0;
    do {
      // Between polling rounds: the condition is read again on every round.
      if (agreementRounds++ > 0) await sleep(1_000);
      const found: typeof disagreements = [];
      await inBatches(reads, 16, async (read) => {
        const status = await statusOf(read.slot.current.url, read.id);
        if (status !== 'completed')
          found.push({ id: read.id, status, replica: read.slot.index, sent: read.sent });
      });
      disagreements = found;
    } while (disagreements.length > 0 && Date.now() < agreeDeadline);

    // One id per key, asked again once all is final: the same body with the same key, sent to a
    // replica other than the one that accepted it, names the message it named before.
    const rebound: string[] = [];
    await inBatches(accepted, 16, async (sent) => {
      const reader = ((sent.acceptedBy ?? 0) + 1) % REPLICAS;
      const answer = await postMessage((fleet.slots[reader] as Slot).current.url, sent);
      const id = answer instanceof Error ? undefined : idOf(answer);
      if (id === undefined || !sent.ids.has(id))
        rebound.push(
          `${sent.marker}: answered ${[...sent.ids].join(', ')}, again ${answer instanceof Error ? answer.message : `${answer.status} ${JSON.stringify(answer.body)}`}`,
        );
    });

    // What the backend saw.
    const maxConcurrency = calls.reduce((most, call) => Math.max(most, call.concurrent), 0);
    const runsByMarker = new Map<string, number>();
    const backendIdsByMarker = new Map<string, Set<string>>();
    for (const call of calls) {
      call.markers.forEach((marker, index) => {
        runsByMarker.set(marker, (runsByMarker.get(marker) ?? 0) + 1);
        const ids = backendIdsByMarker.get(marker) ?? new Set<string>();
        ids.add(call.messageIds[index] as string);
        backendIdsByMarker.set(marker, ids);
      });
    }
    const runTwice = [...runsByMarker.values()].filter((runs) => runs > 1).length;
    const orderViolations = firstRunOrderViolations(calls);
    const overlaps = sessionOverlaps(calls);
    const overLimit = calls.filter((call) => call.concurrent > CLUSTER_LIMIT);

    const neverAccepted = [...ledger.sent.values()].filter((sent) => sent.ids.size === 0);
    const notCompleted = pending.map(({ sent, id }) => ({
      marker: sent.marker,
      id,
      status: lastStatus.get(id),
    }));
    const lostByStatus = new Map<string, number>();
    for (const { status } of notCompleted)
      lostByStatus.set(String(status), (lostByStatus.get(String(status)) ?? 0) + 1);
    const keysWithManyIds = [...ledger.sent.values()].filter((sent) => sent.ids.size > 1);
    const markersWithManyMessages = [...backendIdsByMarker].filter(([, ids]) => ids.size > 1);

    // Error lines of every replica process, by message: evidence for whatever failed.
    const errorLines = new Map<string, number>();
    for (const { gateway } of fleet.started)
      for (const line of gateway.logs)
        if (line.level >= 50) errorLines.set(line.msg, (errorLines.get(line.msg) ?? 0) + 1);
    const logFolder = tempDir();
    fleet.started.forEach(({ slot, gateway }, index) => {
      writeFileSync(
        join(logFolder, `${index}-replica-${slot}-pid-${gateway.child.pid}.jsonl`),
        gateway.logs.map((line) => `${JSON.stringify(line)}\n`).join(''),
      );
    });
    writeFileSync(
      join(logFolder, 'backend-calls.jsonl'),
      calls.map((call) => `${JSON.stringify(call)}\n`).join(''),
    );
    process.stdout.write(`cluster chaos: replica logs and backend calls in ${logFolder}\n`);

    /** What the backend saw of one message, for a failure to say where it stopped. */
    const trace = (marker: string): string =>
      calls
        .filter((call) => call.markers.includes(marker))
        .map(
          (call) =>
            `attempt ${call.attempt} on replica ${call.replica} +${call.start - startedAt}–${(call.end ?? 0) - startedAt} ms`,
        )
        .join(', ') || 'never ran';

    const lost = neverAccepted.length + notCompleted.length;
    recordFigures(`cluster chaos: ${REPLICAS} replicas, ${LOAD_MS / 1000} s`, {
      seed: SEED,
      sent: ledger.sent.size,
      accepted: accepted.length,
      'sent per second': Math.round((ledger.sent.size / (LOAD_MS / 1000)) * 10) / 10,
      retries: ledger.retries,
      'connections refused (replica down)': ledger.refusedConnections,
      'answers lost (connection cut)': ledger.lostAnswers,
      "retries answered with an earlier try's id": ledger.boundBeforeRetry,
      'refused (429/503), retried': ledger.refused,
      '5xx answers (not 503)': ledger.serverErrors.length,
      'other 4xx answers': ledger.otherAnswers.length,
      crashes: fleet.unexpectedExits.length,
      'SIGKILLs + restarts': fleet.kills,
      ...Object.fromEntries([...killAims].map(([aim, count]) => [`kills aimed: ${aim}`, count])),
      'graceful restarts (SIGTERM)': fleet.gracefulRestarts,
      lost,
      'never accepted': neverAccepted.length,
      ...Object.fromEntries(
        [...lostByStatus].map(([status, count]) => [`not completed, reads ${status}`, count]),
      ),
      'keys with more than one id': keysWithManyIds.length + markersWithManyMessages.length + rebound.length,
      'replica status disagreements': disagreements.length,
      'reads of every message on every replica until they agreed': agreementRounds,
      'run twice (at-least-once)': runTwice,
      'order violations': orderViolations.length,
      'session turns overlapping': overlaps.length,
      'backend calls': calls.length,
      'cluster limit': CLUSTER_LIMIT,
      'max concurrency (backend)': maxConcurrency,
      "not completed at the drain's first read": backlogAtLoadEnd,
      'drained in (s)': Math.round(drainedInMs / 100) / 10,
      'duration (s)': Math.round((Date.now() - startedAt) / 1000),
      ...Object.fromEntries(
        [...errorLines].map(([msg, count]) => [`log error: ${msg.split(':')[0]}`, count]),
      ),
    });

    expect(fleet.unexpectedExits, 'replica exits other than our signals').toEqual([]);
    expect(fleet.gracefulExitCodes, 'exit codes after SIGTERM').toEqual(
      Array.from({ length: fleet.gracefulRestarts }, () => 0),
    );
    expect(fleet.kills, 'SIGKILLs').toBe(Math.ceil(LOAD_MS / KILL_EVERY_MS) - 1);
    expect(fleet.gracefulRestarts, 'graceful restarts').toBe(REPLICAS * ROLLING_RESTARTS_AT_MS.length);
    expect(ledger.serverErrors, '5xx answers other than 503').toEqual([]);
    expect(ledger.otherAnswers, '4xx answers other than 429').toEqual([]);
    expect(
      neverAccepted.map((sent) => `${sent.marker} (${sent.tries} tries)`),
      'messages no replica accepted',
    ).toEqual([]);
    expect(
      notCompleted.map(
        ({ marker, id, status }) => `${marker} ${id} reads ${status} (backend: ${trace(marker)})`,
      ),
      `accepted messages not completed after the drain (kills: ${killTimeline.join(', ')})`,
    ).toEqual([]);
    expect(
      [
        ...keysWithManyIds.map((sent) => `${sent.marker}: answered ${[...sent.ids].join(', ')}`),
        ...markersWithManyMessages.map(([marker, ids]) => `${marker}: ran as ${[...ids].join(', ')}`),
        ...rebound,
      ],
      'Idempotency-Keys with more than one message',
    ).toEqual([]);
    const disagreeing = disagreements.map(
      ({ id, status, replica, sent }) =>
        `${id} reads ${status} on replica ${replica} (accepted by ${sent.acceptedBy}; backend: ${trace(sent.marker)})`,
    );
    // Named in the message too: a run's one-line summary shows the message, not the diff.
    expect(
      disagreeing,
      `completed messages another replica reads otherwise: ${disagreeing.join('; ')}`,
    ).toEqual([]);
    expect(orderViolations, 'messages that first ran before an earlier one of their session').toEqual([]);
    expect(overlaps, 'turns of one session that ran at the same time').toEqual([]);
    expect(
      overLimit.map((call) => `${call.markers.join('+')} arrived with ${call.concurrent} in flight`),
      `backend calls beyond the cluster limit of ${CLUSTER_LIMIT}`,
    ).toEqual([]);
    expect(maxConcurrency, 'turns overlapped at the backend (the limit was exercised)').toBeGreaterThan(1);
  });
});

/** The messages still to complete, for the drain's progress lines: a few, then a count by status. */
function describePending(
  pending: ReadonlyArray<{ sent: Sent; id: string }>,
  lastStatus: ReadonlyMap<string, string>,
): string {
  if (pending.length === 0) return 'all completed';
  const byStatus = new Map<string, number>();
  for (const { id } of pending) {
    const status = lastStatus.get(id) ?? '?';
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
  }
  const counts = [...byStatus].map(([status, count]) => `${count} ${status}`).join(', ');
  const first = pending
    .slice(0, 3)
    .map(({ sent, id }) => `${sent.marker} ${id}`)
    .join(', ');
  return `${pending.length} not completed (${counts}): ${first}${pending.length > 3 ? ', …' : ''}`;
}

/**
 * The status a replica reads for `id`: its `status` (with `(delivery pending)` while its replies
 * are not delivered: not final yet), or the HTTP status when there is none.
 */
async function statusOf(url: string, id: string): Promise<string> {
  const response = await fetch(`${url}/v1/messages/${id}`, {
    headers: { authorization: `Bearer ${API_KEY}` },
    signal: AbortSignal.timeout(10_000),
  }).catch(() => undefined);
  if (response === undefined) return 'no answer';
  const body = (await response.json().catch(() => null)) as { status?: string; delivery?: string } | null;
  if (response.status !== 200 || typeof body?.status !== 'string') return String(response.status);
  return body.delivery === 'pending' ? `${body.status} (delivery pending)` : body.status;
}

/** One try of `sent`: its body and key, the one API key; the answer, or why none came. */
function postMessage(
  url: string,
  sent: Sent,
): Promise<{ status: number; body: { id?: string } | string } | (Error & { cause?: { code?: string } })> {
  return fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${API_KEY}`,
      'idempotency-key': sent.marker,
    },
    body: sent.body,
    signal: AbortSignal.timeout(WAIT_TIMEOUT_MS + 20_000),
  })
    .then(async (response) => ({ status: response.status, body: parseJson(await response.text()) }))
    .catch((error: Error & { cause?: { code?: string } }) => error);
}

/** The message id an acceptance (200 or 202) names; undefined for any other answer. */
function idOf(answer: { status: number; body: { id?: string } | string }): string | undefined {
  if (answer.status !== 200 && answer.status !== 202) return undefined;
  return typeof answer.body === 'string' ? undefined : answer.body.id;
}

/** When a message id was made: the gateway's ids are ULIDs (docs/design.md §2), 48 bits of ms first. */
function ulidTime(id: string): number {
  let ms = 0;
  for (const char of id.slice(0, 10)) ms = ms * 32 + '0123456789ABCDEFGHJKMNPQRSTVWXYZ'.indexOf(char);
  return ms;
}

/** A JSON answer's body, or its text when it is not JSON (a failure names what came). */
function parseJson(text: string): { id?: string } | string {
  try {
    return JSON.parse(text) as { id?: string };
  } catch {
    return text;
  }
}

/** Runs `work` over `items`, `width` at a time. */
async function inBatches<T>(
  items: readonly T[],
  width: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

/**
 * Markers whose first run came after a later message of their session, or after the session's
 * next message ran while it had not: a session runs its messages oldest first, so first runs
 * come in sequence (calls are recorded in the order they reached the backend).
 */
function firstRunOrderViolations(calls: readonly BackendCall[]): string[] {
  const highest = new Map<string, number>();
  const seen = new Set<string>();
  const violations: string[] = [];
  for (const call of calls) {
    for (const marker of call.markers) {
      if (seen.has(marker)) continue;
      seen.add(marker);
      const match = markerPattern.exec(marker);
      if (match === null) {
        violations.push(`unknown marker ${marker}`);
        continue;
      }
      const [, session, seqText] = match as unknown as [string, string, string];
      const seq = Number(seqText);
      const before = highest.get(session) ?? -1;
      if (seq !== before + 1) violations.push(`${marker} first ran after ${session}#${before}`);
      highest.set(session, Math.max(before, seq));
    }
  }
  return violations;
}

/** Pairs of calls of one session that were at the backend at the same time. */
function sessionOverlaps(calls: readonly BackendCall[]): string[] {
  const overlaps: string[] = [];
  const bySession = new Map<string, BackendCall[]>();
  for (const call of calls) {
    const ofSession = bySession.get(call.session);
    if (ofSession === undefined) bySession.set(call.session, [call]);
    else ofSession.push(call);
  }
  for (const ofSession of bySession.values()) {
    for (let index = 1; index < ofSession.length; index++) {
      const [before, after] = [ofSession[index - 1] as BackendCall, ofSession[index] as BackendCall];
      if ((before.end ?? Number.POSITIVE_INFINITY) > after.start)
        overlaps.push(`${after.markers.join('+')} started while ${before.markers.join('+')} ran`);
    }
  }
  return overlaps;
}
