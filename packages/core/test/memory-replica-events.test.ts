import { createMemoryReplicaEvents } from '../src/memory/memory-replica-events.js';
import { replicaEventsContract } from '../src/testing/replica-events-contract.js';

replicaEventsContract('memory', async () => {
  const events = createMemoryReplicaEvents();
  return { store: events, close: async () => {}, peer: async () => events.peer() };
});
