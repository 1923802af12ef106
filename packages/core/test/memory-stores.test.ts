import { describe, expect, it } from 'vitest';
import { createMemoryAuditLog } from '../src/memory/memory-audit-log.js';
import { createMemoryChannelLeases } from '../src/memory/memory-channel-leases.js';
import { createMemoryHistoryStore } from '../src/memory/memory-history-store.js';
import { createMemoryJournal } from '../src/memory/memory-journal.js';
import { createMemoryMessageStatusStore } from '../src/memory/memory-message-status-store.js';
import { createMemoryRateBuckets } from '../src/memory/memory-rate-buckets.js';
import { createMemoryReplyOutbox } from '../src/memory/memory-reply-outbox.js';
import { auditLogContract } from '../src/testing/audit-log-contract.js';
import { channelLeasesContract } from '../src/testing/channel-leases-contract.js';
import { historyStoreContract } from '../src/testing/history-store-contract.js';
import { journalContract } from '../src/testing/journal-contract.js';
import { messageStatusStoreContract } from '../src/testing/message-status-store-contract.js';
import { rateBucketsContract } from '../src/testing/rate-buckets-contract.js';
import { replyOutboxContract } from '../src/testing/reply-outbox-contract.js';

/** Memory stores hold nothing to release and nothing survives them, so no `reopen`. */
const inMemory = <Store>(store: Store) => ({ store, close: async () => {} });

journalContract('memory', async ({ now }) => inMemory(createMemoryJournal({ now })));
auditLogContract('memory', async () => inMemory(createMemoryAuditLog()));
messageStatusStoreContract('memory', async ({ now }) => inMemory(createMemoryMessageStatusStore({ now })));
historyStoreContract('memory', async () => inMemory(createMemoryHistoryStore()));
channelLeasesContract('memory', async ({ now }) => inMemory(createMemoryChannelLeases({ now })));
rateBucketsContract('memory', async ({ now }) => inMemory(createMemoryRateBuckets({ now })));
replyOutboxContract('memory', async ({ now }) => inMemory(createMemoryReplyOutbox({ now })));

describe('createMemoryHistoryStore', () => {
  describe('when a conversation grows past maxEntries', () => {
    it('keeps only the newest entries', async () => {
      const history = createMemoryHistoryStore({ maxEntries: 3 });
      for (const content of ['a', 'b', 'c', 'd', 'e']) {
        await history.append('s', 'p', [{ role: 'user', content }]);
      }
      expect((await history.recent('s', 'p', 10)).map((entry) => entry.content)).toEqual(['c', 'd', 'e']);
    });
  });
});
