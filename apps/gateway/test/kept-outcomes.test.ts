import { type Config, ConfigSchema } from '@switchboard/config';
import { createStatusTracker } from '@switchboard/channel-openapi';
import {
  type Outcome,
  type OutcomeBus,
  type QueuedMessage,
  SwitchboardError,
  auditIdOf,
  createController,
  createOutcomeBus,
  createReplySender,
  silentLogger,
} from '@switchboard/core';
import { deliveryFixture, queuedMessageFixture } from '@switchboard/contracts';
import { KEPT_OUTCOME_LEASE_MS, createRedisKeptOutcomes } from '@switchboard/store-redis';
import { postgresReachable, queryPostgres } from '@switchboard/testkit/postgres';
import { redisReachable } from '@switchboard/testkit/redis';
import { describe, expect, it, vi } from 'vitest';
import { createAuditRecorder } from '../src/audit-recorder.js';
import { forgetWhenRecorded, keptOutcomePolicy, recoverKeptOutcome } from '../src/kept-outcomes.js';
import { type Stores, openStores } from '../src/stores.js';
import { useCleanups } from './serve-process.js';
import { keptOutcomeCount, sharedStores } from './shared-stores.js';

const reachable = (await redisReachable()) && (await postgresReachable());
const cleanup = useCleanups();

/** A config on a pool prefix and a schema of the test's own (removed after it), HTTP channel `api`. */
function configOfTest(): Config {
  const stores = sharedStores(cleanup);
  return ConfigSchema.parse({
    store: { kind: 'redis', url: stores.redisUrl, prefix: stores.prefix },
    audit: { kind: 'postgres', url: stores.postgresUrl, schema: stores.schema },
    channels: [{ id: 'api', type: 'openapi' }],
    pipelines: [{ id: 'assistant', type: 'echo' }],
    routing: { default: 'assistant' },
    queue: { max_pending_per_session: 1 },
  });
}

/** One replica's stores and pool, wired as the gateway wires them (`keptOutcomePolicy`). */
async function openReplica(config: Config) {
  const kept = keptOutcomePolicy(config);
  const stores = await openStores(config, silentLogger, { keptOutcome: kept.keep });
  cleanup(() => stores.close());
  const pool = await stores.createPool({
    concurrency: config.concurrency,
    limits: config.queue,
    pipelines: config.pipelines.map((pipeline) => pipeline.policy),
    logger: silentLogger,
  });
  return { stores, pool, kept };
}

/**
 * A replica that dies right after its settlement: whatever it settles reaches no listener, so
 * no audit record or status is written (the continuation after the script never runs).
 */
const deadAfterSettlement = (): OutcomeBus => createOutcomeBus();

/**
 * A replica that records what it is handed as the gateway does — the audit recorder and the HTTP
 * channel's status tracker — and forgets each kept outcome once its records landed. Its clock
 * runs `aheadMs` ahead, so that outcomes whose settling replica died are due for it at once.
 */
async function recordingReplica(config: Config, stores: Stores, aheadMs: number) {
  const kept = keptOutcomePolicy(config);
  const store = config.store as Extract<Config['store'], { kind: 'redis' }>;
  const keptOutcomes = await createRedisKeptOutcomes({
    url: store.url,
    prefix: store.prefix,
    now: () => Date.now() + aheadMs,
    forgetEveryMs: 10,
  });
  cleanup(async () => keptOutcomes.close());
  const outcomes = createOutcomeBus(undefined, undefined, forgetWhenRecorded(kept, keptOutcomes));
  const audit = createAuditRecorder({
    auditLog: stores.auditLog,
    config: config.audit,
    logger: silentLogger,
  });
  outcomes.subscribe(audit.record, { stores: true });
  const tracker = createStatusTracker({
    channelId: 'api',
    statuses: stores.statuses,
    logger: silentLogger,
    events: {
      subscribeOutcomes: (listener) =>
        outcomes.subscribe((outcome, committed) => listener(outcome, 'local', committed), { records: true }),
      subscribeTurnStarts: () => () => {},
    },
  });
  cleanup(async () => tracker.close());
  return { outcomes, keptOutcomes };
}

/** Waits until `check` passes (it throws until then), failing with its last error after 10 s. */
const until = (check: () => Promise<void>) => vi.waitFor(check, { timeout: 10_000 });

/** The audit records of `messageId` in the test's schema. */
function auditRows(config: Config, messageId: string) {
  const { schema } = config.audit as Extract<Config['audit'], { kind: 'postgres' }>;
  return queryPostgres<{ id: string; outcome: string; reason: string | null }>(
    `SELECT id, outcome, reason FROM ${schema}.audit WHERE message_id = $1`,
    [messageId],
  );
}

/** How many outcomes are kept in Redis now. */
function keptCount(config: Config): Promise<number> {
  const store = config.store as Extract<Config['store'], { kind: 'redis' }>;
  return keptOutcomeCount({ redisUrl: store.url as string, prefix: store.prefix });
}

/** A message of the HTTP channel `api`, as queued. */
function apiMessage(index: number): QueuedMessage {
  const queued = queuedMessageFixture(index, { pipeline: 'assistant' });
  return {
    ...queued,
    message: { ...queued.message, channel: 'api', platform: 'openapi' },
    session: `openapi:api:person:s${index}`,
  };
}

/**
 * Runs the due kept outcomes through `replica` as the gateway recovers them (`recoverKeptOutcome`),
 * and waits until every one was forgotten.
 */
async function recover(config: Config, replica: Awaited<ReturnType<typeof recordingReplica>>) {
  const due = await replica.keptOutcomes.claimDue();
  const record = recoverKeptOutcome(config, replica.outcomes);
  for (const outcome of due) expect(record(outcome)).toBe(true);
  await until(async () => expect(await keptCount(config)).toBe(0));
  return due;
}

describe.skipIf(!reachable)('outcomes kept beside their settlement (store: redis, audit: postgres)', () => {
  describe('when a replica dies right after the pool settlement that dead-letters a message', () => {
    it('another replica records its dead letter and final status once, after the lease', async () => {
      const config = configOfTest();
      const dying = await openReplica(config);
      const fatal = new SwitchboardError('SB_PIPELINE_FAILED', {
        message: 'backend said no',
        retryable: false,
      });
      const controller = createController({
        pool: dying.pool,
        pipelines: new Map([['assistant', { id: 'assistant', run: async () => Promise.reject(fatal) }]]),
        policies: new Map(config.pipelines.map((pipeline) => [pipeline.id, pipeline.policy])),
        outcomes: deadAfterSettlement(),
        outbox: dying.stores.outbox,
        logger: silentLogger,
      });
      const queued = apiMessage(1);
      await dying.pool.enqueue(queued);
      controller.start();
      await until(async () => expect(await dying.pool.stats()).toMatchObject({ pending: 0, inflight: 0 }));
      await controller.stop({ drainTimeoutMs: 1000 });
      expect(await auditRows(config, queued.message.id)).toEqual([]);

      // Within the lease the settling replica's records are its own: nothing is due elsewhere.
      const early = await recordingReplica(config, (await openReplica(config)).stores, 0);
      expect(await early.keptOutcomes.claimDue()).toEqual([]);

      const other = await openReplica(config);
      const recovering = await recordingReplica(config, other.stores, KEPT_OUTCOME_LEASE_MS + 1000);
      expect(await recover(config, recovering)).toHaveLength(1);
      await until(async () =>
        expect(await auditRows(config, queued.message.id)).toEqual([
          expect.objectContaining({ outcome: 'dead_lettered', reason: 'fatal_error' }),
        ]),
      );
      expect(await other.stores.statuses.get(queued.message.id)).toMatchObject({
        status: 'dead_lettered',
        error: 'SB_PIPELINE_FAILED: backend said no',
      });
      expect(await recovering.keptOutcomes.claimDue()).toEqual([]);
    });
  });

  describe('when a replica dies right after removing a delivery it gave up', () => {
    it('another replica records the delivery_failed dead letter and final status once', async () => {
      const config = configOfTest();
      const dying = await openReplica(config);
      const queued = apiMessage(2);
      const { raw: _raw, ...message } = queued.message;
      const delivery = deliveryFixture(2, {
        channel: 'api',
        chat: queued.session,
        origin: message,
        messages: [{ message, session: queued.session, pipeline: 'assistant', attempt: 1 }],
        createdAt: Date.now(),
      });
      await dying.stores.outbox.add(delivery);
      const sender = createReplySender({
        outbox: dying.stores.outbox,
        channel: () => ({
          id: 'api',
          send: async () => {
            throw new SwitchboardError('SB_CHANNEL_SEND_FAILED', {
              message: 'chat is gone',
              retryable: false,
            });
          },
        }),
        policy: () => ({
          sendTimeoutMs: 5000,
          concurrency: 1,
          maxAgeMs: 60_000,
          retry: { baseDelayMs: 1000, maxDelayMs: 1000 },
        }),
        outcomes: deadAfterSettlement(),
        now: dying.stores.outboxNow,
      });
      sender.start();
      await until(async () => expect(await dying.stores.outbox.pending()).toEqual({}));
      await sender.stop({ drainTimeoutMs: 1000 });
      expect(await auditRows(config, message.id)).toEqual([]);

      const other = await openReplica(config);
      const recovering = await recordingReplica(config, other.stores, KEPT_OUTCOME_LEASE_MS + 1000);
      expect(await recover(config, recovering)).toHaveLength(1);
      await until(async () =>
        expect(await auditRows(config, message.id)).toEqual([
          expect.objectContaining({ outcome: 'dead_lettered', reason: 'delivery_failed' }),
        ]),
      );
      expect(await other.stores.statuses.get(message.id)).toMatchObject({
        status: 'dead_lettered',
        delivery: 'failed',
      });
    });
  });

  describe('when a replica dies right after an enqueue that drops a message from its full session', () => {
    it('another replica records the dropped message once', async () => {
      const config = configOfTest();
      const dying = await openReplica(config);
      const first = apiMessage(3);
      const second = { ...apiMessage(4), session: first.session };
      await dying.pool.enqueue(first);
      const result = await dying.pool.enqueue(second);
      expect(result).toMatchObject({ accepted: true, overflowed: [expect.anything()] });

      const other = await openReplica(config);
      const recovering = await recordingReplica(config, other.stores, KEPT_OUTCOME_LEASE_MS + 1000);
      expect(await recover(config, recovering)).toHaveLength(1);
      await until(async () =>
        expect(await auditRows(config, first.message.id)).toEqual([
          expect.objectContaining({ outcome: 'dropped', reason: 'queue_overflow' }),
        ]),
      );
      expect(await other.stores.statuses.get(first.message.id)).toMatchObject({ status: 'dropped' });
    });
  });

  describe('when the settling replica records the outcome', () => {
    it('forgets it once the records landed: no other replica records it again', async () => {
      const config = configOfTest();
      const replica = await openReplica(config);
      const settling = await recordingReplica(config, replica.stores, 0);
      const first = apiMessage(5);
      await replica.pool.enqueue(first);
      const result = await replica.pool.enqueue({ ...apiMessage(6), session: first.session });
      if (!result.accepted) throw new Error('the second message was refused');
      expect(await keptCount(config)).toBe(1);
      for (const dropped of result.overflowed) {
        settling.outcomes.record({
          kind: 'dropped',
          reason: 'queue_overflow',
          at: Date.now(),
          message: dropped.message,
          session: dropped.session,
          pipeline: dropped.pipeline,
        });
      }
      await until(async () => expect(await keptCount(config)).toBe(0));
      const later = await recordingReplica(config, replica.stores, KEPT_OUTCOME_LEASE_MS + 1000);
      expect(await later.keptOutcomes.claimDue()).toEqual([]);
      expect(await auditRows(config, first.message.id)).toHaveLength(1);
    });
  });

  describe('when a replica dies after writing the records and before forgetting them', () => {
    it('the replica recording them again writes the same audit record: one stays', async () => {
      const config = configOfTest();
      const replica = await openReplica(config);
      const first = apiMessage(7);
      await replica.pool.enqueue(first);
      await replica.pool.enqueue({ ...apiMessage(8), session: first.session });
      // Its records written by a replica that forgets nothing (it dies before the forget).
      const outcome: Outcome = {
        kind: 'dropped',
        reason: 'queue_overflow',
        at: Date.now(),
        message: first.message,
        session: first.session,
        pipeline: first.pipeline,
      };
      const audit = createAuditRecorder({
        auditLog: replica.stores.auditLog,
        config: config.audit,
        logger: silentLogger,
      });
      expect(await audit.record(outcome)).toBe(true);

      const recovering = await recordingReplica(config, replica.stores, KEPT_OUTCOME_LEASE_MS + 1000);
      expect(await recover(config, recovering)).toHaveLength(1);
      await until(async () =>
        expect(await auditRows(config, first.message.id)).toEqual([
          expect.objectContaining({ id: auditIdOf(outcome), outcome: 'dropped' }),
        ]),
      );
    });
  });
});
