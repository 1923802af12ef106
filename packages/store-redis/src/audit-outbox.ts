import {
  type AuditLog,
  type AuditRecord,
  type IngressRefusal,
  type Logger,
  type MessageStatus,
  type MessageStatusStore,
  type StoredMessageStatus,
  SwitchboardError,
  isSwitchboardError,
  replacesStatus,
  silentLogger,
  statusFromStore,
  statusRank,
  within,
} from '@switchboard/core';
import type { RedisClient, RedisTarget } from './redis-connection.js';
import { storeFailure } from './redis-connection.js';
import { openScriptClient } from './script-client.js';
import type { ReplicationOptions } from './replication-wait.js';
import { defaultReplicaId } from './replica-id.js';

export interface AuditOutboxOptions {
  /**
   * Replicas that must hold a write before the store answers for it (`WAIT`; docs/design.md §5
   * "Failover"). Default: none waited for.
   */
  replication?: ReplicationOptions | undefined;
  /** Redis URL; the outbox opens and owns one connection with `FAIL_FAST_OPTIONS`. Either this or `client`. */
  url?: RedisTarget;
  /** A connection the caller owns (give it `FAIL_FAST_OPTIONS`); `shutdown()` leaves it open. */
  client?: RedisClient;
  /** Key namespace, the pool's: keys are `{<prefix>}:audit-outbox…`. */
  prefix: string;
  /** The audit log the records belong in (PostgreSQL); every read goes to it. */
  inner: AuditLog;
  /**
   * The message statuses beside it (PostgreSQL): a final status written while it is unavailable
   * waits in the outbox too, in order with the records (see `AuditOutbox.statuses`).
   */
  statuses?: MessageStatusStore;
  /**
   * Entries (records and statuses) from which the outbox counts as full: admission then refuses
   * new messages, while the messages admitted already may still add theirs. Default 100000.
   */
  maxEntries?: number;
  /** How often every replica's drainer looks at the outbox (ms). Default 1000. */
  drainEveryMs?: number;
  /** Records one drain step moves to `inner` at most (also the size of a processing list). Default 100. */
  batchSize?: number;
  /** How long a drainer's claim on its batch lasts without a drain step (ms). Default 30000. */
  leaseMs?: number;
  /** `retryAfterMs` of a refused write and of `refusal()` (ms). Default 5000. */
  retryAfterMs?: number;
  /** This replica's name in the drainer leases. Default `<hostname>:<pid>:<random>`. */
  replicaId?: string;
  /** Clock of the drainer leases (ms); replicas must agree within `leaseMs`. Default `Date.now`. */
  now?: () => number;
  /** Child `component: audit.outbox`. Default silent. */
  logger?: Logger;
}

const DEFAULTS = {
  maxEntries: 100_000,
  drainEveryMs: 1000,
  batchSize: 100,
  leaseMs: 30_000,
  retryAfterMs: 5000,
  now: Date.now,
} satisfies Partial<AuditOutboxOptions>;

/** Expired drainers one drain step recovers at most: the work per step stays bounded. */
const RECOVERIES_PER_STEP = 5;

/**
 * An `AuditLog` (and a `MessageStatusStore`) in front of PostgreSQL that keeps records and final
 * statuses in a Redis list while it is unavailable — bounded, since admission refuses new messages
 * once the list holds `maxEntries` — and moves them over once it answers again (docs/design.md §5
 * "Several replicas"). Reads go to the inner log only: a record waiting in the outbox is not
 * visible to `query`, `deadLetters`, `getDeadLetter`, `markReplayed`, `deleteDeadLetter` or `prune` until it is drained.
 */
export interface AuditOutbox extends AuditLog {
  /**
   * The inner statuses, whose `put` falls back to the outbox as `append` does (the store keeps
   * the newest of two puts, so one drained late does not undo a later one); reads go to the
   * inner store. Present when `statuses` was given.
   */
  readonly statuses: MessageStatusStore | undefined;
  /**
   * True while the outbox list held `maxEntries` records when this replica last looked (its last
   * write or drain step, at most `drainEveryMs` ago): no Redis call.
   */
  isFull(): boolean;
  /** For `createIngress({ refuseWhen })`: a refusal while `isFull()`, else undefined. */
  refusal(): IngressRefusal | undefined;
  /**
   * Moves records to the inner log until the outbox is empty or the inner log fails; returns how
   * many it wrote. The timer calls it every `drainEveryMs`; a call while one runs joins it.
   */
  drain(): Promise<number>;
  /** Stops the drainer, hands this replica's unfinished batch back to the outbox, closes an owned connection. */
  shutdown(): Promise<void>;
  readonly replicaId: string;
}

/** One entry of the outbox list: an audit record or a message status, applied in list order. */
type OutboxEntry = { audit: AuditRecord } | { status: MessageStatus };

/** The outbox's keys; all under the deployment's hash tag, so one Redis Cluster slot. */
export function auditOutboxKeysOf(prefix: string) {
  const base = `{${prefix}}:audit-outbox`;
  return {
    outbox: base,
    drainers: `${base}:drainers`,
    waitingStatuses: `${base}:statuses`,
    statusRanks: `${base}:status-ranks`,
    processingOf: (replicaId: string) => `${base}:processing:${replicaId}`,
  };
}

const isUnavailable = (err: unknown) => isSwitchboardError(err) && err.code === 'SB_STORE_UNAVAILABLE';

/** What a status entry adds to its push: its id, JSON and rank (lua/audit-outbox/push.lua). */
function statusArgs(status: MessageStatus): [string, string, number, '1' | '0'] {
  const { version, final } = statusRank(status);
  return [status.id, JSON.stringify(status), version, final ? '1' : '0'];
}

/**
 * Connects (unless given a client), defines the scripts and starts this replica's drainer.
 * Rejects with `SB_STORE_UNAVAILABLE` when Redis does not answer.
 */
export async function createAuditOutbox(options: AuditOutboxOptions): Promise<AuditOutbox> {
  const settings = { ...DEFAULTS, ...definedOnly(options) };
  const { inner, statuses } = options;
  const { maxEntries, batchSize, leaseMs, retryAfterMs, now } = settings;
  if (options.url === undefined && options.client === undefined) {
    throw new SwitchboardError('SB_CONFIG_INVALID', { message: 'audit outbox: give url or client' });
  }
  const problems = (['maxEntries', 'drainEveryMs', 'batchSize', 'leaseMs'] as const)
    .filter((name) => !Number.isInteger(settings[name]) || settings[name] < 1)
    .map((name) => `${name}: must be a positive integer`);
  if (problems.length > 0) {
    throw new SwitchboardError('SB_CONFIG_INVALID', {
      message: `audit outbox: ${problems.join('; ')}`,
      details: { problems },
    });
  }
  const replicaId = options.replicaId ?? defaultReplicaId();
  const logger = (options.logger ?? silentLogger).child({ component: 'audit.outbox' });
  const keys = auditOutboxKeysOf(options.prefix);
  const processing = keys.processingOf(replicaId);

  const { client, ownsClient, script } = await openScriptClient({
    url: options.url,
    client: options.client,
    prefix: options.prefix,
    retryAfterMs,
    replication: options.replication,
  });

  let full = false;
  // Set when the inner log failed; until a drain step writes to it again, appends go straight to
  // the outbox instead of waiting for the inner log's timeout each.
  let innerDown = false;
  let running: Promise<number> | undefined;
  let stopped = false;

  function noteLength(length: number): void {
    const nowFull = length >= maxEntries;
    if (nowFull && !full) logger.error({ maxEntries }, 'audit outbox is full: admission refuses messages');
    if (!nowFull && full) logger.warn({ length }, 'audit outbox has room again');
    full = nowFull;
  }

  /**
   * Appends `entry` to the outbox. Never refused: it belongs to a message admitted already, and
   * admission stops at `maxEntries`, so the list exceeds it by what admitted messages still write.
   */
  async function push(entry: OutboxEntry): Promise<void> {
    const line = JSON.stringify(entry);
    const status = 'status' in entry ? statusArgs(entry.status) : [];
    const { outbox, waitingStatuses, statusRanks } = keys;
    noteLength(
      await script<number>('audit-outbox/push', [outbox, waitingStatuses, statusRanks], [line, ...status]),
    );
  }

  /** Returns dead replicas' batches to the outbox; a failure waits for the next step. */
  async function recover(expired: readonly string[]): Promise<void> {
    for (const other of expired) {
      if (other === replicaId) continue;
      const moved = await script<number>(
        'audit-outbox/recover-batch',
        [keys.outbox, keys.processingOf(other), keys.drainers],
        [other, now()],
      );
      if (moved > 0)
        logger.warn(
          { replica: other, records: moved },
          'drainer lease expired: batch returned to the outbox',
        );
    }
  }

  /**
   * One batch: claim (or take back the unfinished one), append each record in order, then trim
   * what was written. A crash between an append and the trim leaves the record in the processing
   * list: it is appended again, which the inner log ignores (`AuditLog.append` is idempotent by id).
   */
  async function step(): Promise<{ written: number; more: boolean }> {
    const [batch, remaining, expired] = await script<[string[], number, string[]]>(
      'audit-outbox/claim-batch',
      [keys.outbox, processing, keys.drainers],
      [batchSize, replicaId, now() + leaseMs, now(), RECOVERIES_PER_STEP],
    );
    noteLength(remaining);
    let written = 0;
    const writtenStatuses: string[] = [];
    try {
      for (const line of batch) {
        const entry = JSON.parse(line) as OutboxEntry;
        try {
          await apply(entry);
        } catch (err) {
          if (isUnavailable(err)) throw err;
          // Writing it again would fail the same way and hold every record behind it.
          logger.error({ err, entry: line }, 'dead outbox entry: the audit store refused it, dropped');
        }
        if ('status' in entry) writtenStatuses.push(entry.status.id, JSON.stringify(entry.status));
        written += 1;
      }
      // An empty batch proves nothing, but lets the next append try the inner log again.
      if (innerDown && batch.length > 0)
        logger.info({ written }, 'audit store answers again: draining the outbox');
      innerDown = false;
    } catch (err) {
      innerDown = true;
      logger.debug({ err, written }, 'audit store still unavailable: outbox waits');
    }
    if (writtenStatuses.length > 0)
      await script<number>(
        'audit-outbox/forget-written',
        [keys.waitingStatuses, keys.statusRanks],
        writtenStatuses,
      );
    if (written > 0)
      await client.ltrim(processing, written, -1).catch((err: unknown) => {
        throw storeFailure(err, retryAfterMs);
      });
    await recover(expired);
    return { written, more: written === batch.length && batch.length > 0 && !innerDown };
  }

  async function drainAll(): Promise<number> {
    let total = 0;
    for (;;) {
      const { written, more } = await step();
      total += written;
      if (!more || stopped) return total;
    }
  }

  function drain(): Promise<number> {
    running ??= drainAll().finally(() => {
      running = undefined;
    });
    return running;
  }

  const timer = setInterval(() => {
    drain().catch((err: unknown) => logger.warn({ err }, 'audit outbox drain failed: retrying'));
  }, settings.drainEveryMs);
  timer.unref();

  /** Writes one entry to the inner stores. */
  async function apply(entry: OutboxEntry): Promise<void> {
    if ('audit' in entry) return inner.append(entry.audit);
    if (statuses === undefined) throw new Error('a status in the outbox, but no status store to write it to');
    return statuses.put(entry.status);
  }

  /** Writes `entry` to the inner stores, or to the outbox while they are unavailable. */
  async function write(entry: OutboxEntry): Promise<void> {
    if (!innerDown) {
      try {
        await apply(entry);
        return;
      } catch (err) {
        if (!isUnavailable(err)) throw err;
        innerDown = true;
        logger.warn({ err }, 'audit store unavailable: records and statuses wait in the redis outbox');
      }
    }
    await push(entry);
  }
  // Appends under way: shutdown waits for them before it closes Redis, their fallback.
  const appending = new Set<Promise<void>>();

  function tracked(entry: OutboxEntry): Promise<void> {
    const written = write(entry);
    const done = written.finally(() => appending.delete(done)).catch(() => {});
    appending.add(done);
    return written;
  }
  return {
    replicaId,
    append: (record) => tracked({ audit: record }),
    statuses:
      statuses === undefined
        ? undefined
        : {
            put: (status) => tracked({ status }),
            // The copy waiting in the outbox, read first: a drain writes PostgreSQL before it
            // forgets the copy, so one of the two always has the status. With both, the one `put`
            // would keep wins (`replacesStatus`: the higher version; a final one over a non-final
            // one): a replica whose PostgreSQL answers again writes there while older copies wait.
            async get(id) {
              const waiting = await client.hget(keys.waitingStatuses, id).catch((err: unknown) => {
                throw storeFailure(err, retryAfterMs);
              });
              if (waiting === null) return statuses.get(id);
              const copy = statusFromStore(JSON.parse(waiting) as StoredMessageStatus);
              const stored = await statuses.get(id).catch(() => null);
              return stored !== null && !replacesStatus(statusRank(stored), statusRank(copy)) ? stored : copy;
            },
            claimIdempotencyKey: (claim) => statuses.claimIdempotencyKey(claim),
            prune: (beforeMs) => statuses.prune(beforeMs),
          },
    query: (query) => inner.query(query),
    deadLetters: (limit, tenant) => inner.deadLetters(limit, tenant),
    getDeadLetter: (id) => inner.getDeadLetter(id),
    markReplayed: (id, atMs) => inner.markReplayed(id, atMs),
    deleteDeadLetter: (id) => inner.deleteDeadLetter(id),
    prune: (beforeMs) => inner.prune(beforeMs),
    isFull: () => full,
    refusal: () => (full ? { reason: 'audit outbox is full', retryAfterMs } : undefined),
    drain,
    async shutdown() {
      stopped = true;
      clearInterval(timer);
      await Promise.all(appending);
      // A drain stuck on a slow PostgreSQL must not hold the exit: its batch is handed back below.
      if (running !== undefined)
        await within(
          running.catch(() => 0),
          leaseMs,
        );
      try {
        await script<number>(
          'audit-outbox/recover-batch',
          [keys.outbox, processing, keys.drainers],
          [replicaId, Number.MAX_SAFE_INTEGER],
        );
      } catch (err) {
        logger.warn(
          { err },
          'audit outbox batch not handed back: another replica recovers it after its lease',
        );
      }
      if (ownsClient) await client.quit().catch(() => client.disconnect());
    },
  };
}

/** `options` without its undefined fields, so that spreading it keeps the defaults. */
function definedOnly<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as Partial<T>;
}
