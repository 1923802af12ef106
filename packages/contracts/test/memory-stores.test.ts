import {
  createMemoryAuditLog,
  createMemoryChannelLeases,
  createMemoryHandoffStore,
  createMemoryHistoryStore,
  createMemoryJournal,
  createMemoryMessageStatusStore,
  createMemoryRateBuckets,
  createMemoryReplicaEvents,
  createMemoryReplyOutbox,
} from '@switchboard/core';
import {
  auditLogContract,
  channelLeasesContract,
  handoffStoreContract,
  historyStoreContract,
  journalContract,
  messageStatusStoreContract,
  rateBucketsContract,
  replicaEventsContract,
  replyOutboxContract,
} from '../src/index.js';

/** Memory stores hold nothing to release and nothing survives them, so no `reopen`. */
const inMemory = <Store>(store: Store) => ({ store, close: async () => {} });

journalContract('memory', async ({ now }) => inMemory(createMemoryJournal({ now })));
auditLogContract('memory', async () => inMemory(createMemoryAuditLog()));
messageStatusStoreContract('memory', async ({ now }) => inMemory(createMemoryMessageStatusStore({ now })));
handoffStoreContract('memory', async () => inMemory(createMemoryHandoffStore()));
historyStoreContract('memory', async () => inMemory(createMemoryHistoryStore()));
channelLeasesContract('memory', async () => inMemory(createMemoryChannelLeases()));
rateBucketsContract('memory', async ({ now }) => inMemory(createMemoryRateBuckets({ now })));
replyOutboxContract('memory', async ({ now }) => inMemory(createMemoryReplyOutbox({ now })));
replicaEventsContract('memory', async () => {
  const events = createMemoryReplicaEvents();
  return { store: events, close: async () => {}, peer: async () => events.peer() };
});
