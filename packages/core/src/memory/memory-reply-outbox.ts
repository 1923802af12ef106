import type { Settlement } from '../ports/settlement.js';
import type {
  AddResult,
  ClaimedDelivery,
  Delivery,
  DeliveryClaim,
  ReplyOutbox,
} from '../ports/reply-outbox.js';
import { ExpiringKeys } from '../structures/expiring-keys.js';
import { Fifo } from '../structures/fifo.js';
import { type HeapNode, IndexedHeap } from '../structures/indexed-heap.js';
import { plainCopy } from '../structures/plain-copy.js';

/** A stored delivery and its place in add order. */
interface Stored {
  delivery: Delivery;
  seq: number;
}

/**
 * One chat's deliveries, oldest first, and the token of the claim on its head. While its head is
 * unclaimed the chat sits in its channel's `delayed` heap until a claim finds it due, then in
 * `ready`.
 */
interface ChatQueue extends HeapNode {
  chat: string;
  deliveries: Fifo<Stored>;
  claimToken: string | null;
  /** The place a reservation holding this chat took in the adding order (`addReserved`). */
  reservedSeq?: number;
}

/** One channel's chats and the heaps of those whose head may be claimed. */
interface ChannelQueues {
  chats: Map<string, ChatQueue>;
  /** Unclaimed chats whose head is due, the oldest head first. */
  ready: IndexedHeap<ChatQueue>;
  /** Unclaimed chats not yet found due (new heads, heads on backoff), the earliest due first. */
  delayed: IndexedHeap<ChatQueue>;
  count: number;
}

const headOf = (queue: ChatQueue) => queue.deliveries.peek() as Stored;

/**
 * A `ReplyOutbox` in process memory: survives nothing (at shutdown the gateway records what is
 * left as `dropped/shutdown`). Deliveries are copied in (deeply, as a durable store would
 * serialize them) and handed out as shallow copies that the holder reads and does not change. A
 * claim is O(log n) in the channel's chats, as the pool's is. `now` is the clock an ended id is
 * remembered by (`rememberForMs`): the one the reply sender claims by.
 *
 * It offers `reserve`, `addEnded` and `addReserved`: with nothing to commit, a delivery sent before it is stored
 * costs no copy and no queue, only its chat held while the send lasts; what a crash loses is what
 * it would lose anyway.
 */
export function createMemoryReplyOutbox(options: { now?: () => number } = {}): ReplyOutbox {
  const now = options.now ?? Date.now;
  const channels = new Map<string, ChannelQueues>();
  // The ids stored or reserved (`reserve`): adding one again is a duplicate.
  const ids = new Set<string>();
  // Ended deliveries whose id is remembered (`rememberForMs`).
  const ended = new ExpiringKeys();
  const listeners = new Set<(channel: string) => void>();
  let lastSeq = 0;
  let lastToken = 0;

  function signal(channel: string): void {
    for (const listener of listeners) listener(channel);
  }

  function channelOf(channel: string): ChannelQueues {
    let queues = channels.get(channel);
    if (queues === undefined) {
      queues = {
        chats: new Map(),
        ready: new IndexedHeap((a, b) => headOf(a).seq < headOf(b).seq),
        delayed: new IndexedHeap((a, b) => headOf(a).delivery.notBefore < headOf(b).delivery.notBefore),
        count: 0,
      };
      channels.set(channel, queues);
    }
    return queues;
  }

  function claimedQueue(claim: DeliveryClaim): { queues: ChannelQueues; queue: ChatQueue } | null {
    const queues = channels.get(claim.delivery.channel);
    const queue = queues?.chats.get(claim.delivery.chat);
    if (queues === undefined || queue === undefined || queue.claimToken !== claim.token) return null;
    return { queues, queue };
  }

  /**
   * Removes the claimed head; the chat's next delivery becomes its head, announced when
   * `announce` (a caller claiming next takes what is due itself).
   */
  function removeHead(claim: DeliveryClaim, announce: boolean): Settlement {
    const held = claimedQueue(claim);
    if (held === null) return 'lost';
    const { queues, queue } = held;
    const head = queue.deliveries.shift();
    if (head !== undefined) {
      ids.delete(head.delivery.id);
      const { rememberForMs } = head.delivery;
      if (rememberForMs !== undefined) ended.add(head.delivery.id, rememberForMs, now());
    }
    queues.count -= 1;
    queue.claimToken = null;
    if (queue.deliveries.length === 0) queues.chats.delete(queue.chat);
    // Filed as waiting: the next claim moves it to `ready` by the caller's clock.
    else queues.delayed.push(queue);
    if (announce) signal(claim.delivery.channel);
    return 'settled';
  }

  /** True when `id` is stored, reserved or remembered: adding it again is a duplicate. */
  function known(id: string): boolean {
    // The clock is read only when some id is remembered: most deliveries ask for none.
    return ids.has(id) || (ended.size > 0 && ended.has(id, now()));
  }

  /** Frees a chat whose claim held no stored head (a reservation): what came behind it is due. */
  function freeReserved(claim: DeliveryClaim): void {
    const held = claimedQueue(claim);
    if (held === null) return;
    const { queues, queue } = held;
    queue.claimToken = null;
    queue.reservedSeq = undefined;
    if (queue.deliveries.length === 0) {
      queues.chats.delete(queue.chat);
      return;
    }
    queues.delayed.push(queue);
    signal(claim.delivery.channel);
  }

  function store(delivery: Delivery): AddResult {
    if (known(delivery.id)) return 'duplicate';
    const stored = { delivery: plainCopy(delivery), seq: ++lastSeq };
    ids.add(delivery.id);
    const queues = channelOf(delivery.channel);
    queues.count += 1;
    let queue = queues.chats.get(delivery.chat);
    if (queue === undefined) {
      queue = { chat: delivery.chat, deliveries: new Fifo(), claimToken: null, heapIndex: -1 };
      queue.deliveries.push(stored);
      queues.chats.set(delivery.chat, queue);
      queues.delayed.push(queue);
    } else {
      queue.deliveries.push(stored);
    }
    return 'added';
  }

  function claimDue(channel: string, nowMs: number): ClaimedDelivery | null {
    const queues = channels.get(channel);
    if (queues === undefined) return null;
    for (let due = queues.delayed.peek(); due !== undefined; due = queues.delayed.peek()) {
      if (headOf(due).delivery.notBefore > nowMs) break;
      queues.delayed.pop();
      queues.ready.push(due);
    }
    const queue = queues.ready.pop();
    if (queue === undefined) return null;
    queue.claimToken = String(++lastToken);
    // Shallow: the store replaces a delivery's own fields (attempts, notBefore, lastError) and
    // never changes what they hold, so the claim keeps what it was handed. A deep copy here
    // was a tenth of a gateway's CPU per message (bench/HISTORY.md#console-recorders).
    return {
      delivery: { ...headOf(queue).delivery },
      token: queue.claimToken,
      moreDue: queues.ready.peek() !== undefined,
    };
  }

  /** Claims for a caller that just freed or filled a chat, announcing what it leaves due. */
  function claimNext(channel: string, nowMs: number): ClaimedDelivery | null {
    const claimed = claimDue(channel, nowMs);
    if (claimed?.moreDue) signal(channel);
    return claimed;
  }

  return {
    durable: false,
    shared: false,

    async add(delivery) {
      const result = store(delivery);
      if (result === 'added') signal(delivery.channel);
      return result;
    },

    async addAndClaim(delivery, nowMs) {
      const result = store(delivery);
      return { result, claim: result === 'added' ? claimNext(delivery.channel, nowMs) : null };
    },

    async claim(channel, nowMs) {
      return claimDue(channel, nowMs);
    },

    async delivered(claim) {
      return removeHead(claim, true);
    },

    async endAndClaim(claim, nowMs) {
      const settlement = removeHead(claim, false);
      return { settlement, next: claimNext(claim.delivery.channel, nowMs) };
    },

    async retry(claim, notBeforeMs, error) {
      const held = claimedQueue(claim);
      if (held === null) return 'lost';
      const head = headOf(held.queue).delivery;
      head.attempts += 1;
      head.notBefore = notBeforeMs;
      head.lastError = { ...error };
      held.queue.claimToken = null;
      held.queues.delayed.push(held.queue);
      return 'settled';
    },

    async failed(claim) {
      return removeHead(claim, true);
    },

    reserve(delivery, nowMs) {
      if (known(delivery.id)) return 'duplicate';
      if (delivery.notBefore > nowMs) return null;
      const queues = channelOf(delivery.channel);
      // Something of its chat is stored or claimed, or another chat's head is due (older: first).
      if (queues.chats.has(delivery.chat) || queues.ready.size > 0) return null;
      const next = queues.delayed.peek();
      if (next !== undefined && headOf(next).delivery.notBefore <= nowMs) return null;
      // The chat is held by a claim with nothing stored: what is added behind it waits, unclaimed.
      const queue: ChatQueue = {
        chat: delivery.chat,
        deliveries: new Fifo(),
        claimToken: String(++lastToken),
        heapIndex: -1,
        reservedSeq: ++lastSeq,
      };
      queues.chats.set(delivery.chat, queue);
      ids.add(delivery.id);
      return { delivery, token: queue.claimToken as string };
    },

    async addEnded(claim, alongside) {
      const { delivery } = claim;
      if (claimedQueue(claim) === null) throw new Error(`delivery ${delivery.id} is not reserved`);
      // First: a recording that throws leaves the reservation held, for `addReserved`.
      alongside?.();
      const { rememberForMs } = delivery;
      if (rememberForMs !== undefined) ended.add(delivery.id, rememberForMs, now());
      ids.delete(delivery.id);
      freeReserved(claim);
    },

    async addReserved(claim) {
      const { delivery } = claim;
      const held = claimedQueue(claim);
      const seq = held?.queue.reservedSeq;
      if (held === null || seq === undefined) {
        const result = store(delivery);
        if (result === 'added') signal(delivery.channel);
        return result;
      }
      // Its own reservation does not make it a duplicate.
      ids.delete(delivery.id);
      if (known(delivery.id)) {
        freeReserved(claim);
        return 'duplicate';
      }
      // Ahead of what its chat got while it was held, in the place it was reserved at.
      const { queues, queue } = held;
      queue.deliveries.unshiftAll([{ delivery: plainCopy(delivery), seq }]);
      ids.add(delivery.id);
      queues.count += 1;
      freeReserved(claim);
      return 'added';
    },

    async pending() {
      const counts: Record<string, number> = {};
      for (const [channel, queues] of channels) if (queues.count > 0) counts[channel] = queues.count;
      return counts;
    },

    async list(channel) {
      const all: Stored[] = [];
      for (const queue of channels.get(channel)?.chats.values() ?? []) {
        for (let index = 0; index < queue.deliveries.length; index++)
          all.push(queue.deliveries.at(index) as Stored);
      }
      return structuredClone(all.sort((a, b) => a.seq - b.seq).map((stored) => stored.delivery));
    },

    onDue(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
