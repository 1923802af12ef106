import { afterEach, beforeEach } from 'vitest';
import type { AuditRecord, MessageStatus, QueuedMessage } from '@switchboard/core';

/** One store under test, as a contract suite's factory returns it. */
export interface StoreHarness<Store> {
  store: Store;
  /** Releases the store (closes files and connections). */
  close(): Promise<void>;
  /**
   * Durable stores only: closes the store and opens a new one over the same data, so a suite can
   * prove that what was written survives a restart. Suites skip their durability cases without it.
   */
  reopen?(): Promise<Store>;
  /**
   * Shared stores only: another instance over the same data, as a second replica would open it
   * (its own connections and timers), closed with the harness. Suites skip their cases about
   * several replicas without it.
   */
  peer?(): Promise<Store>;
}

/** What a contract suite hands its factory. */
export interface StoreFactoryContext {
  /**
   * The suite's clock (ms since the epoch). Stores with expiry read time through it, so suites
   * can step past a TTL without waiting.
   */
  now(): number;
}

/** Builds a fresh, empty store for each test of a contract suite. */
export type StoreFactory<Store> = (context: StoreFactoryContext) => Promise<StoreHarness<Store>>;

/** Start of every suite's clock: a fixed instant keeps expected values readable. */
const CLOCK_START_MS = Date.UTC(2025, 0, 1);

/** The per-test state a contract suite works with. */
export interface StoreUnderTest<Store> {
  /** The current store; replaced by `reopen`. */
  readonly store: Store;
  /** Moves the suite's clock forward. */
  advance(ms: number): void;
  /** The suite clock's current reading. */
  now(): number;
  /** Reopens a durable store, or null when the implementation is not durable. */
  reopen(): Promise<Store | null>;
  /** Another instance over the same data (a second replica), or null when the store is not shared. */
  peer(): Promise<Store | null>;
}

/**
 * Registers `beforeEach`/`afterEach` hooks that give every test of the enclosing `describe` a
 * fresh store from `factory` and close it afterwards.
 */
export function useStoreUnderTest<Store>(factory: StoreFactory<Store>): StoreUnderTest<Store> {
  let harness: StoreHarness<Store> | undefined;
  let store: Store | undefined;
  let nowMs = CLOCK_START_MS;
  const now = () => nowMs;

  beforeEach(async () => {
    nowMs = CLOCK_START_MS;
    harness = await factory({ now });
    store = harness.store;
  });
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
    store = undefined;
  });

  return {
    get store() {
      if (store === undefined) throw new Error('the store exists only while a test runs');
      return store;
    },
    advance(ms) {
      nowMs += ms;
    },
    now,
    async reopen() {
      if (harness?.reopen === undefined) return null;
      store = await harness.reopen();
      return store;
    },
    async peer() {
      return harness?.peer === undefined ? null : harness.peer();
    },
  };
}

/**
 * A journaled message exercising every part of the model: several element types, a thread, the
 * raw platform event with nested values, and an optional rule.
 */
export function queuedMessageFixture(index: number, overrides: Partial<QueuedMessage> = {}): QueuedMessage {
  const id = `01J0000000000000000${String(index).padStart(7, '0')}`;
  return {
    message: {
      id,
      platform: 'telegram',
      channel: 'tg',
      chat: { type: 'group', id: '-100123', thread: '7' },
      sender: { id: `user-${index}`, name: 'Ada', is_bot: false },
      elements: [
        { type: 'mention', user_id: 'bot', name: 'switchboard', is_bot_self: true },
        { type: 'text', text: `hello ${index}` },
        { type: 'image', file_id: 'AgAD' },
        { type: 'quote', message_id: '41', text: 'earlier' },
      ],
      text: `@switchboard hello ${index}`,
      mentions_bot: true,
      platform_message_id: String(1000 + index),
      received_at: CLOCK_START_MS + index,
      raw: { update_id: index, message: { chat: { id: -100123 }, entities: [{ offset: 0, length: 12 }] } },
      // The message's trace context, which must reach the replica that runs its turn.
      traceparent: `00-4bf92f3577b34da6a3ce929d0e0e4736-${String(index).padStart(16, '0')}-01`,
    },
    session: 'telegram:tg:group:-100123',
    pipeline: 'assistant',
    routedByRule: true,
    rule: 'support-group',
    attempt: 0,
    acceptedAt: CLOCK_START_MS + index,
    ...overrides,
  };
}

/** A queued status of `id` with every field filled; `overrides` pick the rest. */
export function messageStatusFixture(id: string, overrides: Partial<MessageStatus> = {}): MessageStatus {
  return {
    id,
    channel: 'api',
    tenant: 'default',
    generation: 0,
    status: 'queued',
    pipeline: 'assistant',
    rule: null,
    turn: null,
    trace_id: null,
    replies: [],
    delivery: null,
    error: null,
    updated_at: CLOCK_START_MS,
    ...overrides,
  };
}

/** An audit record with every field filled; `overrides` pick the values a test filters on. */
export function auditRecordFixture(index: number, overrides: Partial<AuditRecord> = {}): AuditRecord {
  return {
    id: `01J1000000000000000${String(index).padStart(7, '0')}`,
    at: CLOCK_START_MS + index * 1000,
    outcome: 'discarded',
    reason: 'rule',
    rule: 'drop-ads',
    channel: 'tg',
    platform: 'telegram',
    session: 'telegram:tg:person:42',
    chat_type: 'person',
    chat_id: '42',
    sender_id: '42',
    sender_name: 'Ada',
    pipeline: null,
    message_id: `01J2000000000000000${String(index).padStart(7, '0')}`,
    platform_message_id: String(index),
    text: `buy now ${index}`,
    error: null,
    payload: null,
    replayed_at: null,
    tenant: 'default',
    ...overrides,
  };
}
