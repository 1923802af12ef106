import {
  type IdempotencyBinding,
  type MessageStatus,
  type MessageStatusStore,
  type StatusRank,
  type StoredMessageStatus,
  replacesStatus,
  statusFromStore,
  statusRank,
} from '../ports/message-status-store.js';

const DONE: Promise<void> = Promise.resolve();

/** Options of `createMemoryMessageStatusStore`. */
export interface MemoryMessageStatusStoreOptions {
  /** Clock in ms since the epoch; tests inject their own. Default `Date.now`. */
  now?: () => number;
}

/**
 * What is kept of one message: its rank and time, and its status as JSON text — or, until the end
 * of the event-loop turn it was put in, as the object put (`unwritten`).
 */
interface KeptStatus {
  rank: StatusRank;
  updatedAt: number;
  json: string;
  unwritten: MessageStatus | undefined;
}

/**
 * A `MessageStatusStore` in process memory. Statuses stay until `prune` (the app calls it on a
 * timer); idempotency keys past their TTL count as unbound at once and are deleted by `prune`.
 * Statuses are kept as JSON text, like the SQLite store keeps them: a day of statuses is one
 * string each for the garbage collector to skip over rather than a tree of objects to trace
 * (bench/HISTORY.md#tuning-pass-2-maps-and-the-journal), and a read gets a copy of its own.
 *
 * The text is written at the end of the event-loop turn a status was put in (`setImmediate`):
 * a message's statuses follow each other within one turn (the answer with its delivery pending,
 * then the final status once the HTTP channel's send ran), and only the last of them is
 * serialized. `put` still rejects a status that cannot be serialized (a BigInt, a cycle), keeping
 * the one it had: it walks the status for them, without building text. Callers build a new status
 * for each `put` and never change one they put.
 */
export function createMemoryMessageStatusStore(
  options: MemoryMessageStatusStoreOptions = {},
): MessageStatusStore {
  const now = options.now ?? Date.now;
  const statuses = new Map<string, KeptStatus>();
  // By `[channel, credential, key]` as JSON: no separator a key could contain.
  const keys = new Map<string, IdempotencyBinding & { expiresAt: number }>();
  let unwritten: KeptStatus[] = [];

  /**
   * Serializes what this turn put; `put` checked each, so only a status changed since (callers do
   * not) can fail here, left for its reads to reject.
   */
  const writeAll = () => {
    const kept = unwritten;
    unwritten = [];
    for (const entry of kept) {
      try {
        write(entry);
      } catch {
        // `get` serializes it again and rejects with the error.
      }
    }
  };

  return {
    // Not async: it runs for every message, and has nothing to wait for.
    put(status) {
      try {
        const previous = statuses.get(status.id);
        const rank = statusRank(status);
        if (previous !== undefined && !replacesStatus(previous.rank, rank)) return DONE;
        checkSerializable(status, '', []);
        if (previous === undefined) {
          const entry = { rank, updatedAt: status.updated_at, json: '', unwritten: status };
          statuses.set(status.id, entry);
          hold(entry);
          return DONE;
        }
        previous.rank = rank;
        previous.updatedAt = status.updated_at;
        if (previous.unwritten === undefined) hold(previous);
        previous.unwritten = status;
        return DONE;
      } catch (error) {
        return Promise.reject(error);
      }
    },
    async get(id) {
      const status = statuses.get(id);
      if (status === undefined) return null;
      write(status);
      return statusFromStore(JSON.parse(status.json) as StoredMessageStatus);
    },
    async claimIdempotencyKey({ channel, credential, key, fingerprint, messageId, ttlMs }) {
      const nowMs = now();
      const scoped = JSON.stringify([channel, credential, key]);
      const bound = keys.get(scoped);
      if (bound !== undefined && bound.expiresAt > nowMs)
        return { messageId: bound.messageId, fingerprint: bound.fingerprint };
      keys.set(scoped, { messageId, fingerprint, expiresAt: nowMs + ttlMs });
      return null;
    },
    async prune(beforeMs) {
      const nowMs = now();
      for (const [key, bound] of keys) {
        if (bound.expiresAt <= nowMs) keys.delete(key);
      }
      let pruned = 0;
      for (const [id, status] of statuses) {
        if (status.updatedAt < beforeMs) {
          statuses.delete(id);
          pruned += 1;
        }
      }
      return pruned;
    },
  };

  /** Queues `entry` for `writeAll`, which the first status of a turn schedules. */
  function hold(entry: KeptStatus): void {
    if (unwritten.length === 0) setImmediate(writeAll);
    unwritten.push(entry);
  }
}

/** `entry`'s unwritten status as its JSON text. */
function write(entry: KeptStatus): void {
  if (entry.unwritten === undefined) return;
  entry.json = JSON.stringify(entry.unwritten);
  entry.unwritten = undefined;
}

/**
 * Throws what `JSON.stringify` would throw for `value` — a BigInt, a cycle, a `toJSON` that
 * throws — without building the text, so that `put` can refuse a status it could never read back.
 */
function checkSerializable(value: unknown, key: string | number, ancestors: object[]): void {
  let current = value;
  if (typeof current === 'object' && current !== null) {
    const { toJSON } = current as { toJSON?: unknown };
    if (typeof toJSON === 'function') current = toJSON.call(current, String(key)) as unknown;
  }
  if (typeof current === 'bigint') throw new TypeError('Do not know how to serialize a BigInt');
  if (typeof current !== 'object' || current === null) return;
  if (ancestors.includes(current)) throw new TypeError('Converting circular structure to JSON');
  ancestors.push(current);
  if (Array.isArray(current)) {
    for (let index = 0; index < current.length; index += 1)
      checkSerializable(current[index], index, ancestors);
  } else {
    for (const name of Object.keys(current))
      checkSerializable((current as Record<string, unknown>)[name], name, ancestors);
  }
  ancestors.pop();
}
