import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type AuditLog,
  type AuditRecord,
  type Journal,
  HANDOFF,
  type Outcome,
  PipelinePolicySchema,
  createMemoryAuditLog,
  createMemoryQueryPool,
  createMemoryReplyOutbox,
  createOutcomeBus,
  silentLogger,
  turnIdOf,
} from '@switchboard/core';
import { auditRecordFixture, queuedMessageFixture } from '@switchboard/contracts';
import { createSqliteStore } from '@switchboard/store-sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { createDeadLetterReplay, replayDeliveryKey } from '../../src/admin/dead-letter-replay.js';

const CLAIM_TTL_MS = 30 * 24 * 3_600_000;
const DEAD_LETTER_ID = '01JDEAD0000000000000000001';

function deadLetter(replayable = true): AuditRecord {
  return auditRecordFixture(1, {
    id: DEAD_LETTER_ID,
    outcome: 'dead_lettered',
    reason: 'max_attempts',
    pipeline: 'assistant',
    session: queuedMessageFixture(1).session,
    payload: { ...queuedMessageFixture(1, { attempt: 3 }), replayable },
  });
}

/** A replay over real memory components (or a journal), as the gateway wires it. */
function setup(
  options: { maxPending?: number; perSession?: number; journal?: Journal; auditLog?: AuditLog } = {},
) {
  const auditLog = options.auditLog ?? createMemoryAuditLog();
  const pool = createMemoryQueryPool({
    concurrency: { global: 1, perSession: 1 },
    limits: { maxPending: options.maxPending ?? 100, maxPendingPerSession: options.perSession ?? 100 },
    pipelines: [PipelinePolicySchema.parse({ id: 'assistant' })],
    journal: options.journal,
  });
  const outcomes: Outcome[] = [];
  const bus = createOutcomeBus();
  bus.subscribe((outcome) => outcomes.push(outcome));
  const outbox = createMemoryReplyOutbox();
  const replay = createDeadLetterReplay({
    auditLog,
    pool,
    outbox,
    outcomes: bus,
    logger: silentLogger,
    claimTtlMs: CLAIM_TTL_MS,
    rerouted: () => null,
  });
  return { auditLog, pool, outbox, outcomes, replay };
}

/** Appends a `delivery_failed` dead letter holding the reply 'the answer'; returns its origin. */
async function appendDeliveryFailed(auditLog: AuditLog) {
  const { raw: _raw, ...origin } = queuedMessageFixture(1).message;
  const record = deadLetter();
  await auditLog.append({
    ...record,
    reason: 'delivery_failed',
    payload: {
      ...(record.payload as NonNullable<AuditRecord['payload']>),
      undelivered: { origin, replies: [{ text: 'the answer' }] },
    },
  });
  return origin;
}

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/** A path for a new SQLite file in a folder removed after the test. */
function databasePath(): string {
  const folder = mkdtempSync(join(tmpdir(), 'switchboard-replay-'));
  folders.push(folder);
  return join(folder, 'switchboard.db');
}

describe('dead letter replay', () => {
  describe('when the dead letter is a delivery that failed', () => {
    it('sends its stored replies again through the outbox as the end of its message, runs nothing, and answers 409 the second time', async () => {
      const { auditLog, pool, outbox, replay } = setup();
      const origin = await appendDeliveryFailed(auditLog);
      expect(await replay(DEAD_LETTER_ID)).toMatchObject({ status: 'sending' });
      expect(await outbox.list(origin.channel)).toEqual([
        expect.objectContaining({
          id: `replay:${DEAD_LETTER_ID}`,
          origin,
          replies: [{ text: 'the answer' }],
          // Its end is the message's new outcome: completed once sent, a new dead letter if not.
          ownsOutcome: true,
          // One generation later: its statuses replace those of the run that failed.
          messages: [
            expect.objectContaining({ message: expect.objectContaining({ id: origin.id, generation: 1 }) }),
          ],
        }),
      ]);
      expect((await pool.stats()).pending).toBe(0);
      await expect(replay(DEAD_LETTER_ID)).rejects.toMatchObject({ code: 'SB_HTTP_CONFLICT' });
      expect(await outbox.list(origin.channel)).toHaveLength(1);
    });
  });

  describe('when a delivery_failed replay was sent but its mark was lost', () => {
    it('answers 409 to the next replay and sends nothing again', async () => {
      const { auditLog, outbox, replay } = setup();
      const origin = await appendDeliveryFailed(auditLog);
      // The audit database blips on the mark: the replay fails after its delivery was stored.
      const markReplayed = auditLog.markReplayed.bind(auditLog);
      auditLog.markReplayed = async () => {
        throw new Error('connection reset');
      };
      await expect(replay(DEAD_LETTER_ID)).rejects.toThrow('connection reset');
      auditLog.markReplayed = markReplayed;
      // The sender sends it and removes it from the outbox.
      const claim = await outbox.claim(origin.channel, Date.now());
      expect(claim?.delivery.id).toBe(`replay:${DEAD_LETTER_ID}`);
      await outbox.delivered(claim as NonNullable<typeof claim>);
      // The operator, told it failed, replays again.
      await expect(replay(DEAD_LETTER_ID)).rejects.toMatchObject({ code: 'SB_HTTP_CONFLICT' });
      expect(await outbox.list(origin.channel)).toEqual([]);
      expect(await auditLog.deadLetters(10)).toEqual([]);
    });
  });

  describe('when two replays of one dead letter run at once', () => {
    it.each([
      ['a pool without a journal', () => undefined],
      ['a pool journaling to SQLite', () => createSqliteStore({ path: databasePath() })],
    ])('queues it once and answers the other SB_HTTP_CONFLICT, with %s', async (_, openStore) => {
      const store = openStore();
      const { auditLog, pool, replay } = setup({ journal: store?.journal, auditLog: store?.auditLog });
      await auditLog.append(deadLetter());
      const results = await Promise.allSettled([replay(DEAD_LETTER_ID), replay(DEAD_LETTER_ID)]);
      expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
      expect(results.find((result) => result.status === 'rejected')).toMatchObject({
        reason: { code: 'SB_HTTP_CONFLICT', status: 409 },
      });
      expect((await pool.stats()).pending).toBe(1);
      expect(await auditLog.deadLetters(10)).toEqual([]);
      if (store !== undefined) expect(await store.journal.load()).toHaveLength(1);
      store?.close();
    });
  });

  describe('when a dead letter is replayed', () => {
    it("runs it under the same message id in a turn of its own id, not the failed attempts' one", async () => {
      const { auditLog, pool, replay } = setup();
      await auditLog.append(deadLetter());
      await replay(DEAD_LETTER_ID);
      const turn = await pool.claim();
      const { message } = queuedMessageFixture(1);
      expect(turn?.messages.map((queued) => queued.message.id)).toEqual([message.id]);
      expect(turn?.id).not.toBe(turnIdOf([message.id]));
      expect(turn?.attempt).toBe(1);
      // One generation later: its statuses replace those of the run that was dead-lettered.
      expect(turn?.messages[0]?.message.generation).toBe(1);
    });

    it('runs it after the messages its session accepted before the replay, also when its old journal row was left', async () => {
      const path = databasePath();
      const crashed = createSqliteStore({ path });
      await crashed.auditLog.append(deadLetter());
      // The original's removal failed: its row is still journaled, ahead of a later message.
      await crashed.journal.append(queuedMessageFixture(1, { attempt: 3 }));
      const later = queuedMessageFixture(2);
      await crashed.journal.append(later);
      const { replay } = setup({ journal: crashed.journal, auditLog: crashed.auditLog });
      await replay(DEAD_LETTER_ID);
      crashed.close();

      const store = createSqliteStore({ path });
      const { pool } = setup({ journal: store.journal, auditLog: store.auditLog });
      const recovered = await pool.recover();
      expect(recovered.map((queued) => [queued.message.id, queued.attempt, queued.replayOf])).toEqual([
        [later.message.id, 0, undefined],
        [queuedMessageFixture(1).message.id, 0, DEAD_LETTER_ID],
      ]);
      store.close();
    });
  });

  describe("when the replay's enqueue pushes a waiting message out of its session", () => {
    it('records that message as dropped/queue_overflow', async () => {
      const { auditLog, pool, outcomes, replay } = setup({ perSession: 1 });
      await auditLog.append(deadLetter());
      // Fixtures share one session: this one waits in the dead letter's session.
      const waiting = queuedMessageFixture(2);
      await pool.enqueue(waiting);
      await replay(DEAD_LETTER_ID);
      expect(outcomes).toMatchObject([
        { kind: 'dropped', reason: 'queue_overflow', message: { id: waiting.message.id } },
      ]);
    });
  });

  describe('when the pool refuses the replay', () => {
    it('answers SB_QUEUE_FULL and leaves the dead letter replayable', async () => {
      const { auditLog, pool, replay } = setup({ maxPending: 1 });
      await auditLog.append(deadLetter());
      await pool.enqueue(queuedMessageFixture(2, { session: 'other' }));
      await expect(replay(DEAD_LETTER_ID)).rejects.toMatchObject({ code: 'SB_QUEUE_FULL' });
      expect((await auditLog.deadLetters(10)).map((record) => record.id)).toEqual([DEAD_LETTER_ID]);
      await pool.claim();
      await expect(replay(DEAD_LETTER_ID)).resolves.toMatchObject({ status: 'queued' });
    });

    it('answers SB_DRAINING while draining and leaves the dead letter listed', async () => {
      const { auditLog, pool, replay } = setup();
      await auditLog.append(deadLetter());
      pool.close();
      await expect(replay(DEAD_LETTER_ID)).rejects.toMatchObject({ code: 'SB_DRAINING' });
      expect((await auditLog.deadLetters(10)).map((record) => record.id)).toEqual([DEAD_LETTER_ID]);
    });
  });

  describe("when the dead letter is an operator's reply", () => {
    const operatorReply = (undelivered: boolean) => {
      const record = deadLetter();
      const payload = record.payload as NonNullable<AuditRecord['payload']>;
      const message = { ...payload.message, sender: { id: 'operator:ann', name: 'ann', is_bot: false } };
      const { raw: _raw, ...origin } = queuedMessageFixture(1).message;
      return {
        ...record,
        reason: 'delivery_failed' as const,
        payload: {
          ...payload,
          message,
          pipeline: HANDOFF,
          ...(undelivered ? { undelivered: { origin, replies: [{ text: 'a person here' }] } } : {}),
        },
      };
    };

    it('sends its kept text again as an operator reply', async () => {
      const { auditLog, outbox, replay } = setup();
      await auditLog.append(operatorReply(true));
      expect(await replay(DEAD_LETTER_ID)).toMatchObject({ status: 'sending' });
      const [delivery] = await outbox.list(queuedMessageFixture(1).message.channel);
      expect(delivery).toMatchObject({ operator: 'ann', replies: [{ text: 'a person here' }] });
    });

    it('refuses one whose text was not kept, and queues nothing for a pipeline', async () => {
      const { auditLog, pool, replay } = setup();
      await auditLog.append(operatorReply(false));
      await expect(replay(DEAD_LETTER_ID)).rejects.toMatchObject({ code: 'SB_DEAD_LETTER_NOT_REPLAYABLE' });
      expect((await pool.stats()).pending).toBe(0);
    });
  });

  describe('when the dead letter was stored without its whole text', () => {
    it('answers SB_DEAD_LETTER_NOT_REPLAYABLE and queues nothing', async () => {
      const { auditLog, pool, replay } = setup();
      await auditLog.append(deadLetter(false));
      await expect(replay(DEAD_LETTER_ID)).rejects.toMatchObject({
        code: 'SB_DEAD_LETTER_NOT_REPLAYABLE',
        status: 422,
      });
      expect((await pool.stats()).pending).toBe(0);
    });
  });

  describe('when the process died after a replay was queued and before it was marked', () => {
    it('recovers the message once, and the next replay marks the dead letter and answers 409', async () => {
      const path = databasePath();
      const crashed = createSqliteStore({ path });
      await crashed.auditLog.append(deadLetter());
      // What the replay's enqueue wrote before the process died: the claim and the message, in one write.
      const queued = { ...queuedMessageFixture(1), acceptedAt: 5 };
      await crashed.journal.append(queued, replayDeliveryKey(DEAD_LETTER_ID, CLAIM_TTL_MS));
      crashed.close();

      const store = createSqliteStore({ path });
      const { pool, replay } = setup({ journal: store.journal, auditLog: store.auditLog });
      expect((await pool.recover()).map((entry) => entry.message.id)).toEqual([queued.message.id]);
      await expect(replay(DEAD_LETTER_ID)).rejects.toMatchObject({ code: 'SB_HTTP_CONFLICT' });
      expect((await pool.stats()).pending).toBe(1);
      expect(await store.auditLog.deadLetters(10)).toEqual([]);
      store.close();
    });
  });
});
