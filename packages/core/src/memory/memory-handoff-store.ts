import { withoutRaw } from '../model/message.js';
import {
  type Handoff,
  type HandoffEntry,
  type HandoffStore,
  newHandoff,
  replyEntryOf,
} from '../ports/handoff-store.js';
import { plainCopy } from '../structures/plain-copy.js';

interface State {
  handoff: Handoff;
  entries: HandoffEntry[];
  /** Message and reply ids written, each once. */
  ids: Set<string>;
}

/** Sessions waiting longest first: by the oldest unread message, then by when the handoff began. */
function byLongestWaiting(a: Handoff, b: Handoff): number {
  const waitA = a.waitingSince ?? Number.POSITIVE_INFINITY;
  const waitB = b.waitingSince ?? Number.POSITIVE_INFINITY;
  if (waitA !== waitB) return waitA - waitB;
  return a.startedAt - b.startedAt || (a.session < b.session ? -1 : a.session > b.session ? 1 : 0);
}

/** A `HandoffStore` in process memory, for tests and `store: memory`. */
export function createMemoryHandoffStore(): HandoffStore {
  const sessions = new Map<string, State>();
  const copy = (handoff: Handoff): Handoff => plainCopy(handoff);

  return {
    async begin(session, start) {
      const found = sessions.get(session);
      if (found !== undefined) return { handoff: copy(found.handoff), created: false };
      const handoff = plainCopy(newHandoff(session, start));
      sessions.set(session, { handoff, entries: [], ids: new Set() });
      return { handoff: copy(handoff), created: true };
    },

    async get(session) {
      const found = sessions.get(session);
      return found === undefined ? null : copy(found.handoff);
    },

    async hold(session, messages, { at, pipeline, maxEntries }) {
      const state = sessions.get(session);
      if (state === undefined) return 'not_in_handoff';
      const ids = new Set<string>();
      const fresh = messages.filter((message) => {
        if (state.ids.has(message.id) || ids.has(message.id)) return false;
        ids.add(message.id);
        return true;
      });
      if (fresh.length === 0) return 'held';
      if (state.handoff.held + fresh.length > maxEntries) return 'full';
      const { handoff } = state;
      for (const message of fresh) {
        handoff.lastSeq += 1;
        const kept = plainCopy(withoutRaw(message));
        state.entries.push({ seq: handoff.lastSeq, at, from: 'user', message: kept });
        state.ids.add(message.id);
        handoff.origin = kept;
      }
      handoff.held += fresh.length;
      handoff.unread += fresh.length;
      handoff.waitingSince ??= at;
      if (pipeline !== undefined) handoff.pipeline = pipeline;
      return 'held';
    },

    async reply(session, reply, { maxEntries }) {
      const state = sessions.get(session);
      if (state === undefined) return 'not_in_handoff';
      const { handoff } = state;
      const before = copy(handoff);
      if (state.ids.has(reply.id)) return { before };
      if (state.handoff.lastSeq - state.handoff.held >= maxEntries) return 'full';
      handoff.lastSeq += 1;
      state.entries.push({ seq: handoff.lastSeq, ...replyEntryOf(reply) });
      state.ids.add(reply.id);
      handoff.unread = 0;
      handoff.waitingSince = null;
      handoff.activeAt = reply.at;
      return { before };
    },

    async transcript(session, afterSeq, limit) {
      const state = sessions.get(session);
      if (state === undefined || limit <= 0) return [];
      return plainCopy(state.entries.filter((entry) => entry.seq > afterSeq).slice(0, limit));
    },

    async list(limit) {
      return [...sessions.values()]
        .map((state) => state.handoff)
        .sort(byLongestWaiting)
        .slice(0, Math.max(0, limit))
        .map(copy);
    },

    async end(session, options) {
      const state = sessions.get(session);
      if (state === undefined) return null;
      if (options?.startedAt !== undefined && state.handoff.startedAt !== options.startedAt) return null;
      if (options?.activeAt !== undefined && state.handoff.activeAt !== options.activeAt) return null;
      sessions.delete(session);
      return { handoff: state.handoff, transcript: state.entries };
    },

    async idle(before, limit) {
      const found: Handoff[] = [];
      for (const state of sessions.values()) {
        if (found.length >= limit) break;
        if (state.handoff.activeAt < before) found.push(copy(state.handoff));
      }
      return found;
    },

    async count() {
      return sessions.size;
    },
  };
}
