import {
  type AddResult,
  type ClaimedDelivery,
  type Delivery,
  type DeliveryClaim,
  type DeliveryError,
  type HeapNode,
  CountedKeys,
  IndexedHeap,
  type ReplyOutbox,
  type Settlement,
} from '@switchboard/core';
import type { Database } from 'better-sqlite3';
import type { GroupCommit } from './group-commit.js';
import type { JournalRowWrites } from './sqlite-journal.js';

/** How often expired remembered ids are deleted: each delete is one index range, not per send. */
const FORGET_EVERY_MS = 60_000;
/** Expired remembered ids deleted at most per removal. */
const FORGET_BATCH = 1000;

/**
 * Payload characters per channel that heads may keep as added, so that claiming them reads
 * nothing: bounded, as a platform outage can leave many chats waiting with long answers.
 */
const KEPT_PAYLOAD = 4 * 1024 * 1024;

/** What a claimed chat maps to while its settlement commits. */
const SETTLING = '';

interface OutboxRow {
  attempts: number;
  not_before: number;
  last_error: string | null;
  payload: string;
}

/** An unclaimed chat's oldest row: where a claim of that chat would read. */
interface Head extends HeapNode {
  chat: string;
  seq: number;
  notBefore: number;
  /** The row as this store added it, while unchanged (a retry updates the row, not this). */
  row?: OutboxRow;
}

/** One channel's unclaimed heads: by chat, and in the heaps a claim pops from. */
interface ChannelHeads {
  byChat: Map<string, Head>;
  /** Heads found due, the oldest first. */
  ready: IndexedHeap<Head>;
  /** Heads not yet found due (new ones, ones on backoff), the earliest due first. */
  delayed: IndexedHeap<Head>;
  /** Payload characters of the heads holding their `row`, at most `KEPT_PAYLOAD`. */
  keptPayload: number;
}

/** The stored delivery with the columns a retry updates; set on the parsed object, not copied. */
function deliveryOf(row: OutboxRow): Delivery {
  const delivery = JSON.parse(row.payload) as Delivery;
  delivery.attempts = row.attempts;
  delivery.notBefore = row.not_before;
  if (row.last_error !== null) delivery.lastError = JSON.parse(row.last_error) as DeliveryError;
  // Only a delivery added with a `lastError` stores one in its payload; the column wins.
  else if (delivery.lastError !== undefined) delete delivery.lastError;
  return delivery;
}

/**
 * The `ReplyOutbox` over the `outbox` table. Writes go through the group commit, so a delivery's
 * removal commits with the outcome's audit record written in the same tick. Claims live in this
 * process (the file belongs to one server): a chat stays claimed until its settlement has
 * committed, so no claim can read the row a pending removal is about to delete; a reopened
 * store starts with none. The unclaimed chats' heads are kept in memory too (read from `outbox`
 * on open, then moved by this store's own committed writes), so a claim is a heap pop and one
 * row read, or none for a head this store added (its row is kept until claimed, up to 4 Mi
 * characters of payload per channel). `now` is the clock ended ids are remembered by
 * (`rememberForMs`): the one the reply sender claims by.
 *
 * With `journal`, the journal of the same file, a delivery that owns its messages' outcome marks
 * them answered in the write that stores it, and removes them in the write that ends it: a crash
 * in between leaves them journaled but answered, so the restarted pool does not run them again
 * while this outbox sends their answer (docs/design.md §2 "Durability").
 */
export function createSqliteReplyOutbox(
  db: Database,
  commit: GroupCommit,
  now: () => number = Date.now,
  journal?: JournalRowWrites,
): ReplyOutbox {
  const insert = db.prepare<[string, string, string, number, number, string]>(
    `INSERT INTO outbox (id, channel, chat, attempts, not_before, payload) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (id) DO NOTHING`,
  );
  // A chat's oldest row, through `outbox_chat (channel, chat, seq)`: its head after a settlement.
  const firstOfChat = db.prepare<[string, string], { seq: number; not_before: number }>(
    'SELECT seq, not_before FROM outbox WHERE channel = ? AND chat = ? ORDER BY seq LIMIT 1',
  );
  const rowAt = db.prepare<[number], OutboxRow>(
    'SELECT attempts, not_before, last_error, payload FROM outbox WHERE seq = ?',
  );
  // Each chat's oldest row, through `outbox_chat` (SQLite takes the bare columns from the MIN row).
  const storedHeads = db.prepare<[], { channel: string; chat: string; seq: number; not_before: number }>(
    'SELECT channel, chat, MIN(seq) AS seq, not_before FROM outbox GROUP BY channel, chat',
  );
  const remove = db.prepare<[string]>('DELETE FROM outbox WHERE id = ?');
  const rowsOfChat = db.prepare<[string, string], OutboxRow & { id: string }>(
    'SELECT id, attempts, not_before, last_error, payload FROM outbox WHERE channel = ? AND chat = ? ORDER BY seq',
  );
  const insertRow = db.prepare<[string, string, string, number, number, string | null, string]>(
    `INSERT INTO outbox (id, channel, chat, attempts, not_before, last_error, payload)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  const remembered = db.prepare<[string, number], { id: string }>(
    'SELECT id FROM outbox_ended WHERE id = ? AND expires_at > ?',
  );
  const remember = db.prepare<[string, number]>(
    'INSERT INTO outbox_ended (id, expires_at) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at',
  );
  // A bounded batch, so that the first removal after a long stop does not delete a backlog in
  // one go inside its own commit; the rest goes with the next ones.
  const forgetExpired = db.prepare<[number]>(
    `DELETE FROM outbox_ended WHERE id IN (SELECT id FROM outbox_ended WHERE expires_at <= ? LIMIT ${FORGET_BATCH})`,
  );
  const reschedule = db.prepare<[number, string, string]>(
    'UPDATE outbox SET attempts = attempts + 1, not_before = ?, last_error = ? WHERE id = ?',
  );
  const counts = db.prepare<[], { channel: string; count: number }>(
    'SELECT channel, COUNT(*) AS count FROM outbox GROUP BY channel',
  );
  const listed = db.prepare<[string], OutboxRow>(
    'SELECT attempts, not_before, last_error, payload FROM outbox WHERE channel = ? ORDER BY seq',
  );
  // Per channel, claimed chat → the claim's token.
  const claims = new Map<string, Map<string, string>>();
  const listeners = new Set<(channel: string) => void>();
  // Tokens need only be unique within this store object: claims do not outlive it.
  let lastToken = 0;
  let forgotAt = Number.NEGATIVE_INFINITY;
  // The last batch was full: expired ids are left, so the next removal deletes more.
  let expiredLeft = false;

  // Per channel, the unclaimed chats' heads, kept in step with the file by every committed write
  // of this store (the only writer): a claim pops a heap and reads one row, and a claim when every
  // chat with deliveries is claimed reads nothing.
  const heads = new Map<string, ChannelHeads>();
  // Channels whose heads must be read from the file again before their next claim.
  const stale = new Set<string>();
  // Chats (`chatKey`) that had a delivery added while claimed: untracked until freed. A settled
  // claim reads the chat's head anyway; a reservation (`reserve`) reads it only when listed here.
  const addedBehind = new Set<string>();
  const chatKey = (delivery: Delivery) => `${delivery.channel}\n${delivery.chat}`;
  // The ids of the deliveries reserved now (`reserve`): adding one again is a duplicate.
  const reservedIds = new Set<string>();
  // Chats (`chatKey`) with an add still in its commit, and how many: not yet among the heads, so
  // a reservation must wait for it (it goes first; it may even be the same delivery).
  const adding = new CountedKeys();

  function headsOf(channel: string): ChannelHeads {
    let found = heads.get(channel);
    if (found === undefined) {
      found = {
        byChat: new Map(),
        ready: new IndexedHeap((a, b) => a.seq < b.seq),
        delayed: new IndexedHeap((a, b) => a.notBefore < b.notBefore),
        keptPayload: 0,
      };
      heads.set(channel, found);
    }
    return found;
  }

  /**
   * Tracks `chat`'s head at `seq`, unless the chat is claimed or its head is tracked already;
   * with its `row` when this store just added it and the channel's kept rows leave room for it.
   */
  function track(channel: string, chat: string, seq: number, notBefore: number, row?: OutboxRow): void {
    const channelHeads = headsOf(channel);
    if (claims.get(channel)?.has(chat) || channelHeads.byChat.has(chat)) return;
    const head: Head = { chat, seq, notBefore, heapIndex: -1 };
    if (row !== undefined && channelHeads.keptPayload + row.payload.length <= KEPT_PAYLOAD) {
      head.row = row;
      channelHeads.keptPayload += row.payload.length;
    }
    channelHeads.byChat.set(chat, head);
    channelHeads.delayed.push(head);
  }

  /**
   * Tracks the chat's oldest row as its head, if it has one left. Runs after a settlement
   * committed, which must not fail for it: a read that throws leaves the channel to be read
   * again from the file by its next claim.
   */
  function trackFirstOf(channel: string, chat: string): void {
    try {
      const first = firstOfChat.get(channel, chat);
      if (first !== undefined) track(channel, chat, first.seq, first.not_before);
    } catch {
      stale.add(channel);
    }
  }

  /** The unclaimed heads of `channel`, or of every channel, read again from the file. */
  function load(channel?: string): void {
    if (channel !== undefined) heads.delete(channel);
    for (const head of storedHeads.iterate()) {
      if (channel === undefined || head.channel === channel)
        track(head.channel, head.chat, head.seq, head.not_before);
    }
  }

  load();

  function signal(channel: string): void {
    for (const listener of listeners) listener(channel);
  }

  function holds(claim: DeliveryClaim): boolean {
    return claims.get(claim.delivery.channel)?.get(claim.delivery.chat) === claim.token;
  }

  /**
   * The journaled messages whose outcome `delivery` records: a turn's answer's. An operator's
   * reply owns its outcome too, but was never journaled, and its id is the operator's to choose:
   * it must not mark or remove a queued message that has the same id.
   */
  const journaledIdsOf = (delivery: Delivery) =>
    delivery.ownsOutcome && delivery.turnId !== null
      ? delivery.messages.map((answered) => answered.message.id)
      : [];

  /** Removes an ended delivery's row, then ends it (`ended`). */
  function end(delivery: Delivery): void {
    remove.run(delivery.id);
    ended(delivery);
  }

  /** Removes an ended delivery's messages from the journal, remembering its id when it asked to be. */
  function ended(delivery: Delivery): void {
    journal?.remove(journaledIdsOf(delivery));
    if (delivery.rememberForMs === undefined) return;
    const nowMs = now();
    if (expiredLeft || nowMs - forgotAt >= FORGET_EVERY_MS) {
      forgotAt = nowMs;
      expiredLeft = forgetExpired.run(nowMs).changes === FORGET_BATCH;
    }
    remember.run(delivery.id, nowMs + delivery.rememberForMs);
  }

  /**
   * Commits `write` for a claim that still holds, then frees its chat, announced when `announce`
   * (a caller claiming next takes what is due itself).
   */
  async function settle(claim: DeliveryClaim, write: () => void, announce = true): Promise<Settlement> {
    if (!holds(claim)) return 'lost';
    const { channel, chat } = claim.delivery;
    // Settling: the token no longer holds (a second settlement is lost), the chat stays claimed.
    claims.get(channel)?.set(chat, SETTLING);
    try {
      await commit(write);
    } catch (err) {
      // Rolled back: the claim holds again, so its holder retries the settlement. Freeing the
      // chat would hand a sent delivery out to be sent again, as often as the commit fails.
      claims.get(channel)?.set(chat, claim.token);
      throw err;
    }
    claims.get(channel)?.delete(chat);
    // Read for any claim: what was added behind it is tracked now.
    addedBehind.delete(chatKey(claim.delivery));
    trackFirstOf(channel, chat);
    if (announce) signal(channel);
    return 'settled';
  }

  /** What `insertDelivery` wrote: `seq` is the added row's. */
  interface Inserted {
    result: AddResult;
    seq: number;
  }

  /** Inserts `delivery` in the current write, unless its id is stored or remembered. */
  function insertDelivery(delivery: Delivery, payload: string, inserted: Inserted): void {
    if (remembered.get(delivery.id, now()) !== undefined) {
      inserted.result = 'duplicate';
      return;
    }
    // A duplicate still stored too: its end removes the messages, whichever run stored it.
    journal?.markAnswered(journaledIdsOf(delivery));
    const { changes, lastInsertRowid } = insert.run(
      delivery.id,
      delivery.channel,
      delivery.chat,
      delivery.attempts,
      delivery.notBefore,
      payload,
    );
    inserted.result = changes === 1 ? 'added' : 'duplicate';
    inserted.seq = Number(lastInsertRowid);
  }

  async function store(delivery: Delivery): Promise<AddResult> {
    if (reservedIds.has(delivery.id)) return 'duplicate';
    const payload = JSON.stringify(delivery);
    const inserted: Inserted = { result: 'added', seq: 0 };
    const key = chatKey(delivery);
    adding.add(key);
    try {
      await commit(() => insertDelivery(delivery, payload, inserted));
    } finally {
      adding.delete(key);
    }
    const { result, seq } = inserted;
    if (result === 'added') {
      // Added behind a reservation: tracked once the reservation ends.
      if (claims.get(delivery.channel)?.has(delivery.chat)) addedBehind.add(chatKey(delivery));
      // The chat's head when it had none: one it had is older, claimed or tracked.
      const row = {
        attempts: delivery.attempts,
        not_before: delivery.notBefore,
        last_error: null,
        payload,
      };
      track(delivery.channel, delivery.chat, seq, delivery.notBefore, row);
    }
    return result;
  }

  /**
   * Frees a reserved chat: tracks the row added behind the reservation, if any, announced
   * (reading nothing when none was: the reservation is on the path of every message).
   */
  function freeReserved(delivery: Delivery): void {
    const { channel, chat } = delivery;
    reservedIds.delete(delivery.id);
    claims.get(channel)?.delete(chat);
    if (!addedBehind.delete(chatKey(delivery))) return;
    trackFirstOf(channel, chat);
    signal(channel);
  }

  /**
   * Stores a reserved delivery that was not stored ended, in the place it was reserved at: its
   * chat had nothing stored then, so every row of the chat was added behind it, and is moved
   * behind it (deleted and inserted again, taking a later `seq`) in the same write. The chat stays
   * held until that write settled, so nothing of it is sent meanwhile.
   */
  async function storeReserved(delivery: Delivery): Promise<AddResult> {
    const { channel, chat } = delivery;
    claims.get(channel)?.set(chat, SETTLING);
    const payload = JSON.stringify(delivery);
    const inserted: Inserted = { result: 'added', seq: 0 };
    let moved = 0;
    try {
      await commit(() => {
        // Read in the write: a row issued before it in the same batch is in the file by then.
        const behind = rowsOfChat.all(channel, chat);
        for (const row of behind) remove.run(row.id);
        insertDelivery(delivery, payload, inserted);
        for (const row of behind)
          insertRow.run(row.id, channel, chat, row.attempts, row.not_before, row.last_error, row.payload);
        moved = behind.length;
      });
    } catch (err) {
      freeReserved(delivery);
      throw err;
    }
    if (moved > 0) addedBehind.add(chatKey(delivery));
    if (inserted.result === 'added' && !addedBehind.has(chatKey(delivery))) {
      reservedIds.delete(delivery.id);
      claims.get(channel)?.delete(chat);
      track(channel, chat, inserted.seq, delivery.notBefore, {
        attempts: delivery.attempts,
        not_before: delivery.notBefore,
        last_error: null,
        payload,
      });
      signal(channel);
    } else freeReserved(delivery);
    return inserted.result;
  }

  /** The claim of a new claim of `channel`'s `chat`, taken now. */
  function take(channel: string, chat: string): string {
    const token = String(++lastToken);
    let claimed = claims.get(channel);
    if (claimed === undefined) {
      claimed = new Map();
      claims.set(channel, claimed);
    }
    claimed.set(chat, token);
    return token;
  }

  function claimDue(channel: string, nowMs: number): ClaimedDelivery | null {
    if (stale.delete(channel)) load(channel);
    for (let reloaded = false; ; reloaded = true) {
      const channelHeads = heads.get(channel);
      if (channelHeads === undefined) return null;
      const { byChat, ready, delayed } = channelHeads;
      for (let due = delayed.peek(); due !== undefined && due.notBefore <= nowMs; due = delayed.peek()) {
        delayed.pop();
        ready.push(due);
      }
      const head = ready.peek();
      if (head === undefined) return null;
      const row = head.row ?? rowAt.get(head.seq);
      if (row === undefined) {
        // Not where it was tracked (cannot happen while this store is the file's only writer):
        // the channel's heads are read from the file again, once.
        if (reloaded) return null;
        load(channel);
        continue;
      }
      // Read (and parsed) before the head leaves the heaps: a read that throws leaves it there.
      const delivery = deliveryOf(row);
      ready.pop();
      byChat.delete(head.chat);
      if (head.row !== undefined) channelHeads.keptPayload -= head.row.payload.length;
      return { delivery, token: take(channel, delivery.chat), moreDue: ready.peek() !== undefined };
    }
  }

  /** Claims for a caller that just freed or filled a chat, announcing what it leaves due. */
  function claimNext(channel: string, nowMs: number): ClaimedDelivery | null {
    const claimed = claimDue(channel, nowMs);
    if (claimed?.moreDue) signal(channel);
    return claimed;
  }

  return {
    durable: true,
    shared: false,

    async add(delivery) {
      const result = await store(delivery);
      if (result === 'added') signal(delivery.channel);
      return result;
    },

    async addAndClaim(delivery, nowMs) {
      const result = await store(delivery);
      return { result, claim: result === 'added' ? claimNext(delivery.channel, nowMs) : null };
    },

    async claim(channel, nowMs) {
      return claimDue(channel, nowMs);
    },

    delivered(claim) {
      return settle(claim, () => end(claim.delivery));
    },

    async endAndClaim(claim, nowMs) {
      const settlement = await settle(claim, () => end(claim.delivery), false);
      return { settlement, next: claimNext(claim.delivery.channel, nowMs) };
    },

    reserve(delivery, nowMs) {
      const { channel, chat } = delivery;
      if (reservedIds.has(delivery.id) || remembered.get(delivery.id, now()) !== undefined)
        return 'duplicate';
      if (delivery.notBefore > nowMs || stale.has(channel) || claims.get(channel)?.has(chat)) return null;
      if (adding.size > 0 && adding.has(chatKey(delivery))) return null;
      const channelHeads = heads.get(channel);
      if (channelHeads !== undefined) {
        // Something of its chat waits, or another chat's head is due (older: it goes first).
        if (channelHeads.byChat.has(chat) || channelHeads.ready.size > 0) return null;
        const next = channelHeads.delayed.peek();
        if (next !== undefined && next.notBefore <= nowMs) return null;
      }
      reservedIds.add(delivery.id);
      return { delivery, token: take(channel, chat) };
    },

    async addEnded(claim, alongside) {
      const { delivery } = claim;
      if (!holds(claim)) throw new Error(`delivery ${delivery.id} is not reserved`);
      claims.get(delivery.channel)?.set(delivery.chat, SETTLING);
      let written: Promise<void> | undefined;
      try {
        commit.unit(() => {
          written = commit(() => ended(delivery));
          alongside?.();
        });
        await written;
      } catch (err) {
        // Rejected with the same error when `alongside` threw; handled here.
        written?.catch(() => {});
        // Nothing of the unit is stored: the reservation holds, for `addReserved` to store the
        // delivery in its place.
        claims.get(delivery.channel)?.set(delivery.chat, claim.token);
        throw err;
      }
      freeReserved(delivery);
    },

    async addReserved(claim) {
      if (!holds(claim)) throw new Error(`delivery ${claim.delivery.id} is not reserved`);
      return storeReserved(claim.delivery);
    },

    retry(claim, notBeforeMs, error) {
      return settle(claim, () => reschedule.run(notBeforeMs, JSON.stringify(error), claim.delivery.id));
    },

    failed(claim) {
      return settle(claim, () => end(claim.delivery));
    },

    async pending() {
      const result: Record<string, number> = {};
      for (const { channel, count } of counts.all()) result[channel] = count;
      return result;
    },

    async list(channel) {
      return listed.all(channel).map(deliveryOf);
    },

    onDue(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
