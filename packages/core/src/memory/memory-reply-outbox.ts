import { newUlid } from '../ids.js';
import type { Settlement } from '../ports/query-pool.js';
import type { AddResult, Delivery, DeliveryClaim, ReplyOutbox } from '../ports/reply-outbox.js';

/** A stored delivery and its place in add order. */
interface Stored {
  delivery: Delivery;
  seq: number;
}

/** One chat's deliveries, oldest first, and the token of the claim on its head. */
interface ChatQueue {
  deliveries: Stored[];
  claimToken: string | null;
}

/**
 * A `ReplyOutbox` in process memory: survives nothing (at shutdown the gateway records what is
 * left as `dropped/shutdown`). Deliveries are copied in and out, as a durable store would
 * serialize them. A claim scans the channel's chats: fine for the chats one process serves.
 */
export function createMemoryReplyOutbox(): ReplyOutbox {
  // Per channel, chats in the order their current head was added (a Map keeps insertion order;
  // a chat whose head leaves is moved behind, see `settle`).
  const channels = new Map<string, Map<string, ChatQueue>>();
  const ids = new Set<string>();
  let lastSeq = 0;
  const listeners = new Set<(channel: string) => void>();

  function signal(channel: string): void {
    for (const listener of listeners) listener(channel);
  }

  function claimedQueue(claim: DeliveryClaim): ChatQueue | null {
    const queue = channels.get(claim.delivery.channel)?.get(claim.delivery.chat);
    return queue?.claimToken === claim.token ? queue : null;
  }

  /** Removes the claimed head; the chat's next delivery becomes its head. */
  function removeHead(claim: DeliveryClaim): Settlement {
    const chats = channels.get(claim.delivery.channel);
    const queue = claimedQueue(claim);
    if (chats === undefined || queue === null) return 'lost';
    const head = queue.deliveries.shift();
    if (head !== undefined) ids.delete(head.delivery.id);
    queue.claimToken = null;
    chats.delete(claim.delivery.chat);
    // Re-inserted behind the other chats; claim compares the heads' add order anyway.
    if (queue.deliveries.length > 0) chats.set(claim.delivery.chat, queue);
    signal(claim.delivery.channel);
    return 'settled';
  }

  return {
    durable: false,

    async add(delivery): Promise<AddResult> {
      if (ids.has(delivery.id)) return 'duplicate';
      const copy = structuredClone(delivery);
      const stored = { delivery: copy, seq: ++lastSeq };
      ids.add(copy.id);
      let chats = channels.get(copy.channel);
      if (chats === undefined) {
        chats = new Map();
        channels.set(copy.channel, chats);
      }
      const queue = chats.get(copy.chat);
      if (queue === undefined) chats.set(copy.chat, { deliveries: [stored], claimToken: null });
      else queue.deliveries.push(stored);
      signal(copy.channel);
      return 'added';
    },

    async claim(channel, nowMs) {
      const chats = channels.get(channel);
      if (chats === undefined) return null;
      let chosen: ChatQueue | null = null;
      for (const queue of chats.values()) {
        const head = queue.deliveries[0];
        if (head === undefined || queue.claimToken !== null || head.delivery.notBefore > nowMs) continue;
        if (chosen === null || head.seq < (chosen.deliveries[0] as Stored).seq) chosen = queue;
      }
      if (chosen === null) return null;
      chosen.claimToken = newUlid();
      return {
        delivery: structuredClone((chosen.deliveries[0] as Stored).delivery),
        token: chosen.claimToken,
      };
    },

    async delivered(claim) {
      return removeHead(claim);
    },

    async retry(claim, notBeforeMs, error) {
      const queue = claimedQueue(claim);
      const head = queue?.deliveries[0]?.delivery;
      if (queue === null || head === undefined) return 'lost';
      head.attempts += 1;
      head.notBefore = notBeforeMs;
      head.lastError = { ...error };
      queue.claimToken = null;
      return 'settled';
    },

    async failed(claim) {
      return removeHead(claim);
    },

    async pending() {
      const counts: Record<string, number> = {};
      for (const [channel, chats] of channels) {
        let count = 0;
        for (const queue of chats.values()) count += queue.deliveries.length;
        if (count > 0) counts[channel] = count;
      }
      return counts;
    },

    async list(channel) {
      const all: Stored[] = [];
      for (const queue of channels.get(channel)?.values() ?? []) all.push(...queue.deliveries);
      return structuredClone(all.sort((a, b) => a.seq - b.seq).map((stored) => stored.delivery));
    },

    onDue(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
