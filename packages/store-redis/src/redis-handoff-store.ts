import {
  DEFAULT_TENANT,
  type Handoff,
  type HandoffEntry,
  type HandoffStore,
  type HoldResult,
  type InboundMessage,
  SwitchboardError,
  replyEntryOf,
} from '@switchboard/core';
import type { RedisClient, RedisTarget } from './redis-connection.js';
import { storeFailure } from './redis-connection.js';
import { openScriptClient } from './script-client.js';
import type { ReplicationOptions } from './replication-wait.js';

export interface RedisHandoffStoreOptions {
  /**
   * Replicas that must hold a write before the store answers for it (`WAIT`; docs/design.md §5
   * "Failover"). Default: none waited for.
   */
  replication?: ReplicationOptions | undefined;
  /** Redis URL; the store opens and owns one connection with `FAIL_FAST_OPTIONS`. Either this or `client`. */
  url?: RedisTarget;
  /** A connection the caller owns (give it `FAIL_FAST_OPTIONS`); `close()` leaves it open. */
  client?: RedisClient;
  /** The deployment's prefix: keys are `{<prefix>}:handoff…` (`handoffKeysOf`). */
  prefix: string;
  /** `retryAfterMs` of `SB_STORE_UNAVAILABLE` while Redis does not answer. Default 1000. */
  retryAfterMs?: number;
}

const DEFAULTS = {
  retryAfterMs: 1000,
} satisfies Partial<RedisHandoffStoreOptions>;

/** `HandoffStore` in Redis, plus closing the connection it owns. */
export interface RedisHandoffStore extends HandoffStore {
  /** Closes an owned connection. */
  close(): Promise<void>;
}

/**
 * The keys of a session's handoff, in the order every `lua/handoff/` script takes them: its HASH,
 * its transcript (a LIST of the entries' JSON; an entry's seq is its position + 1), the ids
 * written (a SET), then the deployment's inbox (a ZSET in `list` order, lua/handoff/includes/inbox.lua)
 * and its handoffs by last operator action (a ZSET scored by `activeAt`). Every key carries the
 * deployment's hash tag, as the pool's and the outbox's do: the indexes span sessions, and one
 * Redis Cluster slot lets `begin` and `end` change a session's keys and the indexes in one script.
 * The session comes last in each key, so no session's key can be another's (a session key may
 * hold colons, a thread's id may be any word).
 */
export function handoffKeysOf(prefix: string, session: string): string[] {
  const base = `{${prefix}}:`;
  return [
    `${base}handoff:${session}`,
    `${base}handoff-transcript:${session}`,
    `${base}handoff-ids:${session}`,
    `${base}handoffs:inbox`,
    `${base}handoffs:active`,
  ];
}

/** Where the session starts in an inbox member (`<waitingSince>:<startedAt>:<session>`, 15 digits each). */
const INBOX_SESSION_AT = 32;

/** The handoff a HASH holds, as HGETALL (an object) or a script (field, value, … pairs) returns it. */
function handoffOf(session: string, fields: Record<string, string>): Handoff {
  return {
    session,
    // Absent on a handoff begun before handoffs named their tenant.
    ...(fields.tenant === undefined ? {} : { tenant: fields.tenant }),
    reason: fields.reason as string,
    by: fields.by as string,
    startedAt: Number(fields.startedAt),
    activeAt: Number(fields.activeAt),
    pipeline: fields.pipeline ?? null,
    origin: fields.origin === undefined ? null : (JSON.parse(fields.origin) as InboundMessage),
    held: Number(fields.held),
    unread: Number(fields.unread),
    waitingSince: fields.waitingSince === undefined ? null : Number(fields.waitingSince),
    lastSeq: Number(fields.lastSeq),
  };
}

function fieldsOf(pairs: readonly string[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (let index = 0; index < pairs.length; index += 2)
    fields[pairs[index] as string] = pairs[index + 1] as string;
  return fields;
}

/** The message's JSON as a transcript keeps it: without the platform event. */
function messageJson(message: InboundMessage): string {
  const { raw: _raw, ...kept } = message;
  return JSON.stringify(kept);
}

const entryOf = (json: string, seq: number): HandoffEntry => ({ seq, ...JSON.parse(json) }) as HandoffEntry;

/**
 * The handoffs of a deployment in Redis, shared by its replicas (docs/design.md §5 "Several
 * replicas"): `begin`, `hold`, `reply` and `end` are each one Lua script (`lua/handoff/`), so a
 * `hold` for a session not in handoff is one round trip; the reads are plain commands. A
 * transcript holds at most the `maxEntries` its writers give. Connects (unless given a client)
 * and defines the scripts; rejects with `SB_STORE_UNAVAILABLE` when Redis does not answer, as
 * does every call while it stays away.
 */
export async function createRedisHandoffStore(options: RedisHandoffStoreOptions): Promise<RedisHandoffStore> {
  const retryAfterMs = options.retryAfterMs ?? DEFAULTS.retryAfterMs;
  if (options.url === undefined && options.client === undefined) {
    throw new SwitchboardError('SB_CONFIG_INVALID', { message: 'handoff store: give url or client' });
  }
  const { client, ownsClient, script } = await openScriptClient({
    url: options.url,
    client: options.client,
    prefix: options.prefix,
    retryAfterMs,
    replication: options.replication,
  });
  const keysOf = (session: string) => handoffKeysOf(options.prefix, session);
  const [, , , inboxKey, activeKey] = keysOf('');
  const failed = (err: unknown): never => {
    throw storeFailure(err, retryAfterMs);
  };

  /** The handoffs of `sessions`, in that order, leaving out those that ended since they were listed. */
  async function handoffsOf(sessions: readonly string[]): Promise<Handoff[]> {
    if (sessions.length === 0) return [];
    const batch = client.pipeline();
    for (const session of sessions) batch.hgetall((keysOf(session) as [string])[0]);
    const replies = (await batch.exec().catch(failed)) ?? [];
    const found: Handoff[] = [];
    for (const [index, [err, fields]] of replies.entries()) {
      if (err !== null) failed(err);
      const hash = fields as Record<string, string>;
      if (Object.keys(hash).length > 0) found.push(handoffOf(sessions[index] as string, hash));
    }
    return found;
  }

  return {
    async begin(session, start) {
      const [created, pairs] = await script<[number, string[]]>('handoff/begin', keysOf(session), [
        session,
        start.at,
        start.reason,
        start.by,
        start.pipeline ?? '',
        start.origin === undefined ? '' : messageJson(start.origin),
        start.tenant ?? DEFAULT_TENANT,
      ]);
      return { handoff: handoffOf(session, fieldsOf(pairs)), created: created === 1 };
    },

    async get(session) {
      const fields = await client.hgetall((keysOf(session) as [string])[0]).catch(failed);
      return Object.keys(fields).length === 0 ? null : handoffOf(session, fields);
    },

    async hold(session, messages, { at, pipeline, maxEntries }) {
      // Asked for every turn: a session not in handoff (nearly all) costs one small command, not a
      // script carrying the turn's messages. One begun just after this answer runs its turn, as
      // one begun just after the script would.
      const keys = keysOf(session);
      if ((await client.exists(keys[0] as string).catch(failed)) === 0) return 'not_in_handoff';
      const pairs = messages.flatMap((message) => [message.id, messageJson(message)]);
      return script<HoldResult>('handoff/hold', keys, [session, at, pipeline ?? '', maxEntries, ...pairs]);
    },

    async reply(session, reply, { maxEntries }) {
      const entry = replyEntryOf(reply);
      const answer = await script<string[] | 'not_in_handoff' | 'full'>('handoff/reply', keysOf(session), [
        session,
        reply.at,
        maxEntries,
        reply.id,
        JSON.stringify(entry),
      ]);
      return typeof answer === 'string' ? answer : { before: handoffOf(session, fieldsOf(answer)) };
    },

    async transcript(session, afterSeq, limit) {
      if (limit <= 0) return [];
      const first = Math.max(0, afterSeq);
      const entries = await client
        .lrange((keysOf(session) as [string, string])[1], first, first + limit - 1)
        .catch(failed);
      return entries.map((json, index) => entryOf(json, first + index + 1));
    },

    async list(limit) {
      if (limit <= 0) return [];
      const members = await client.zrange(inboxKey as string, 0, String(limit - 1)).catch(failed);
      return handoffsOf(members.map((member) => member.slice(INBOX_SESSION_AT)));
    },

    async end(session, options) {
      const ended = await script<[] | [string[], string[]]>('handoff/end', keysOf(session), [
        session,
        options?.startedAt ?? '',
        options?.activeAt ?? '',
      ]);
      if (ended.length === 0) return null;
      const [pairs, entries] = ended;
      return {
        handoff: handoffOf(session, fieldsOf(pairs)),
        transcript: entries.map((json, index) => entryOf(json, index + 1)),
      };
    },

    async idle(before, limit) {
      if (limit <= 0) return [];
      const sessions = await client
        .zrangebyscore(activeKey as string, '-inf', `(${before}`, 'LIMIT', 0, limit)
        .catch(failed);
      return handoffsOf(sessions);
    },

    async count() {
      return client.zcard(activeKey as string).catch(failed);
    },

    async close() {
      if (ownsClient) await client.quit().catch(() => client.disconnect());
    },
  };
}
