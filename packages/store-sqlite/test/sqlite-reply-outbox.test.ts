import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Delivery,
  type DeliveryClaim,
  type Logger,
  type MessageStatus,
  type Outcome,
  createOutcomeBus,
  createReplySender,
  silentLogger,
} from '@switchboard/core';
import { deliveryFixture, queuedMessageFixture } from '@switchboard/contracts';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createGroupCommit } from '../src/group-commit.js';
import { createSqliteStore } from '../src/index.js';
import { migrate } from '../src/migrations.js';
import { createSqliteReplyOutbox } from '../src/sqlite-reply-outbox.js';
import { openDatabase } from '../src/sqlite-store.js';

const folders: string[] = [];

afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

describe('sqlite reply outbox with the reply sender', () => {
  describe('when the commit that removes a delivered delivery fails', () => {
    it('records no outcome and sends nothing again, writes the removal again, and records the outcome once it commits', async () => {
      const folder = mkdtempSync(join(tmpdir(), 'switchboard-outbox-'));
      folders.push(folder);
      const path = join(folder, 'switchboard.db');
      const store = createSqliteStore({ path });
      // Another connection to the file makes the removal fail, as a full disk or an I/O error would.
      const other = new BetterSqlite3(path);
      other.exec(
        "CREATE TRIGGER outbox_full BEFORE DELETE ON outbox BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END",
      );
      const outcomes: Outcome[] = [];
      let outcomeRecorded: () => void = () => {};
      const recorded = new Promise<void>((resolve) => {
        outcomeRecorded = resolve;
      });
      const bus = createOutcomeBus();
      bus.subscribe((outcome) => {
        outcomes.push(outcome);
        outcomeRecorded();
      });
      let commitFailed: () => void = () => {};
      const failedOnce = new Promise<void>((resolve) => {
        commitFailed = resolve;
      });
      const logger: Logger = {
        ...silentLogger,
        error: (_bindings, message) => {
          if (message.startsWith('settlement failed to commit')) commitFailed();
        },
        child: () => logger,
      };
      let sends = 0;
      const channel = {
        id: 'tg',
        send: async () => {
          sends += 1;
        },
      };
      const delivery = deliveryFixture(1, { channel: 'tg', createdAt: Date.now(), notBefore: 0 });
      await store.outbox.add({ ...delivery, messages: delivery.messages.slice(0, 1) });
      const sender = createReplySender({
        outbox: store.outbox,
        channel: () => channel,
        policy: () => ({
          sendTimeoutMs: 5_000,
          concurrency: 1,
          maxAgeMs: 60_000,
          retry: { baseDelayMs: 1_000, maxDelayMs: 1_000 },
        }),
        outcomes: bus,
        logger,
      });
      try {
        sender.start();
        await failedOnce;
        // The removal rolled back: the message is not over, nobody was told it was, and the
        // delivery, sent once, is not handed out to be sent again.
        expect(outcomes).toHaveLength(0);
        expect(await store.outbox.pending()).toEqual({ tg: 1 });
        expect(await store.outbox.claim('tg', Date.now())).toBeNull();

        other.exec('DROP TRIGGER outbox_full');
        await recorded;
        await sender.stop({ drainTimeoutMs: 1_000 });
        expect(outcomes).toEqual([expect.objectContaining({ kind: 'completed' })]);
        expect(await store.outbox.pending()).toEqual({});
        expect(sends).toBe(1);
      } finally {
        await sender.stop({ drainTimeoutMs: 0 });
        other.close();
        store.close();
      }
    });
  });
});

describe('sqlite reply outbox when reading a chat’s next head fails', () => {
  it('reads the channel again and hands out the next delivery of every chat, also one settled in the same commit', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'switchboard-outbox-'));
    folders.push(folder);
    const db = openDatabase(join(folder, 'switchboard.db'), 5000, false);
    migrate(db, 'switchboard.db');
    // The next-head read fails once when armed, as an I/O error would.
    const failure = { armed: false };
    const failingOnce = new Proxy(db, {
      get(target, property) {
        if (property !== 'prepare') return Reflect.get(target, property);
        return (sql: string) => {
          const statement = target.prepare(sql);
          if (!sql.includes('ORDER BY seq LIMIT 1')) return statement;
          return new Proxy(statement, {
            get(inner, name) {
              if (name !== 'get') return Reflect.get(inner, name);
              return (...args: unknown[]) => {
                if (failure.armed) {
                  failure.armed = false;
                  throw new Error('disk I/O error');
                }
                return (inner.get as (...values: unknown[]) => unknown)(...args);
              };
            },
          });
        };
      },
    });
    const outbox = createSqliteReplyOutbox(failingOnce, createGroupCommit(db));
    try {
      const [x1, y1, x2, y2] = [
        deliveryFixture(1, { chat: 'x' }),
        deliveryFixture(2, { chat: 'y' }),
        deliveryFixture(3, { chat: 'x' }),
        deliveryFixture(4, { chat: 'y' }),
      ];
      for (const delivery of [x1, y1, x2, y2]) await outbox.add(delivery as Delivery);
      const first = [await outbox.claim('tg', 10_000), await outbox.claim('tg', 10_000)] as DeliveryClaim[];
      expect(first.map((claim) => claim.delivery.id)).toEqual([x1?.id, y1?.id]);
      // Claims as the reply sender does when told a chat is free: at once, in the same tick.
      const handedOut: string[] = [];
      outbox.onDue(() => {
        void outbox.claim('tg', 10_000).then((claim) => {
          if (claim !== null) handedOut.push(claim.delivery.id);
        });
      });
      failure.armed = true;
      await Promise.all(first.map((claim) => outbox.delivered(claim)));
      for (
        let claim = await outbox.claim('tg', 10_000);
        claim !== null;
        claim = await outbox.claim('tg', 10_000)
      ) {
        handedOut.push(claim.delivery.id);
      }
      expect(failure.armed).toBe(false);
      expect(handedOut.sort()).toEqual([x2?.id, y2?.id].sort());
    } finally {
      db.close();
    }
  });
});

/** A store on a new file, with a reply sender for the channel `tg`, whose sends are recorded. */
function sendingBeforeStoring(options: {
  localSend: boolean;
  logger?: Logger;
  /** Runs as each outcome is recorded, with the store's status write. */
  record?: (outcome: Outcome, write: (status: MessageStatus) => Promise<void>) => void;
}) {
  const folder = mkdtempSync(join(tmpdir(), 'switchboard-outbox-'));
  folders.push(folder);
  const path = join(folder, 'switchboard.db');
  const store = createSqliteStore({ path });
  const outcomes: Array<{ outcome: Outcome; committed?: Promise<boolean> }> = [];
  const bus = {
    record(outcome: Outcome, committed?: Promise<boolean>) {
      outcomes.push({ outcome, committed });
      options.record?.(outcome, (status) => store.statuses.put(status));
    },
  };
  const sends: Array<{ id: string; committed?: Promise<boolean> }> = [];
  const channel = {
    id: 'tg',
    localSend: options.localSend,
    send: async (
      origin: { id: string },
      _replies: unknown,
      _signal: AbortSignal,
      sendOptions?: { committed?: Promise<boolean> },
    ) => {
      sends.push({ id: origin.id, committed: sendOptions?.committed });
    },
  };
  const sender = createReplySender({
    outbox: store.outbox,
    channel: () => channel,
    policy: () => ({
      sendTimeoutMs: 5_000,
      concurrency: 4,
      maxAgeMs: 60_000,
      retry: { baseDelayMs: 1_000, maxDelayMs: 1_000 },
    }),
    outcomes: bus,
    logger: options.logger ?? silentLogger,
    pollMs: 60_000,
  });
  return { path, store, sender, sends, outcomes };
}

/** A delivery answering two messages, both journaled. */
async function journaledAnswer(
  store: ReturnType<typeof createSqliteStore>,
  index: number,
): Promise<Delivery> {
  const delivery = deliveryFixture(index, { channel: 'tg', createdAt: Date.now(), rememberForMs: 60_000 });
  for (const answered of delivery.messages) {
    const queued = queuedMessageFixture(index);
    await store.journal.append({ ...queued, message: { ...queued.message, id: answered.message.id } });
  }
  return delivery;
}

describe('sqlite reply outbox when a channel sends before its delivery is stored', () => {
  describe('when the chat has nothing ahead', () => {
    it('sends, then stores the delivery ended with its journal removal and outcome in one commit', async () => {
      const { store, sender, sends, outcomes } = sendingBeforeStoring({ localSend: true });
      try {
        sender.start();
        const delivery = await journaledAnswer(store, 1);
        const before = store.counts.commits;
        expect(await sender.add(delivery)).toBe('ended');
        expect(store.counts.commits - before).toBe(1);
        expect(sends).toHaveLength(1);
        expect(await sends[0]?.committed).toBe(true);
        expect(outcomes.map(({ outcome }) => outcome.kind)).toEqual(['completed', 'completed']);
        expect(await Promise.all(outcomes.map(({ committed }) => committed))).toEqual([true, true]);
        expect(await store.journal.load()).toEqual([]);
        expect(await store.outbox.pending()).toEqual({});
        // Its id is remembered: the answer of a run again is neither stored nor sent.
        expect(await sender.add(delivery)).toBe('duplicate');
        expect(sends).toHaveLength(1);
      } finally {
        await sender.stop({ drainTimeoutMs: 0 });
        store.close();
      }
    });
  });

  describe('when a delivery of the chat waits in the outbox', () => {
    it('stores the new one behind it and sends both in order', async () => {
      const { store, sender, sends } = sendingBeforeStoring({ localSend: true });
      try {
        const first = deliveryFixture(1, { channel: 'tg', chat: 'x', createdAt: Date.now() });
        const second = deliveryFixture(2, { channel: 'tg', chat: 'x', createdAt: Date.now() });
        await store.outbox.add(first);
        sender.start();
        expect(await sender.add(second)).toBe('added');
        await expect.poll(() => store.outbox.pending()).toEqual({});
        expect(sends.map(({ id }) => id)).toEqual([first.origin.id, second.origin.id]);
        // Stored first, each was sent without waiting for a later commit.
        expect(sends.map(({ committed }) => committed)).toEqual([undefined, undefined]);
      } finally {
        await sender.stop({ drainTimeoutMs: 0 });
        store.close();
      }
    });
  });

  describe('when the write storing it ended fails', () => {
    it('tells the send it was not stored, then stores the delivery and sends it again', async () => {
      let commitFailed: () => void = () => {};
      const failed = new Promise<void>((resolve) => {
        commitFailed = resolve;
      });
      const logger: Logger = {
        ...silentLogger,
        error: (_bindings, message) => {
          if (message.startsWith('storing a sent delivery failed')) commitFailed();
        },
        child: () => logger,
      };
      let failedStatus = 'not written';
      const { path, store, sender, sends, outcomes } = sendingBeforeStoring({
        localSend: true,
        logger,
        // The final status of the first outcome, written as the HTTP channel writes it: at once.
        record: (outcome, write) => {
          if (failedStatus !== 'not written') return;
          failedStatus = 'pending';
          write({
            id: outcome.message.id,
            channel: 'tg',
            tenant: 'default',
            generation: 0,
            status: 'completed',
            pipeline: 'assistant',
            rule: null,
            turn: 'turn-1',
            replies: [{ text: 'answer 1' }],
            delivery: 'delivered',
            error: null,
            trace_id: null,
            updated_at: 1,
          }).then(
            () => {
              failedStatus = 'fulfilled';
            },
            () => {
              failedStatus = 'rejected';
            },
          );
        },
      });
      // Another connection makes remembering the id fail, as a full disk would.
      const other = new BetterSqlite3(path);
      other.exec(
        "CREATE TRIGGER ended_full BEFORE INSERT ON outbox_ended BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END",
      );
      try {
        sender.start();
        const delivery = await journaledAnswer(store, 1);
        const added = sender.add(delivery);
        await failed;
        other.exec('DROP TRIGGER ended_full');
        expect(await added).toBe('added');
        expect(await sends[0]?.committed).toBe(false);
        // The outcome's final status, written alongside, rolled back with it.
        expect(failedStatus).toBe('rejected');
        // The journal rows stayed (rolled back with the write), now marked answered.
        expect((await store.journal.load()).map((entry) => entry.answered)).toEqual([true, true]);
        await expect.poll(() => store.outbox.pending()).toEqual({});
        expect(sends).toHaveLength(2);
        expect(sends[1]?.committed).toBeUndefined();
        expect(await store.journal.load()).toEqual([]);
        const ended = await Promise.all(outcomes.map(({ committed }) => committed ?? true));
        expect(ended).toEqual([false, false, true, true]);
      } finally {
        await sender.stop({ drainTimeoutMs: 0 });
        other.close();
        store.close();
      }
    });
  });

  describe('when the channel does not send locally', () => {
    it('stores the delivery before sending it', async () => {
      const { store, sender, sends } = sendingBeforeStoring({ localSend: false });
      try {
        sender.start();
        const delivery = await journaledAnswer(store, 1);
        expect(await sender.add(delivery)).toBe('added');
        await expect.poll(() => store.outbox.pending()).toEqual({});
        expect(sends).toEqual([{ id: delivery.origin.id, committed: undefined }]);
      } finally {
        await sender.stop({ drainTimeoutMs: 0 });
        store.close();
      }
    });
  });
});

/** What the chat saw: the ids of the sends that were not rolled back, in order. */
async function seenBy(sends: ReadonlyArray<{ id: string; committed?: Promise<boolean> }>): Promise<string[]> {
  const seen: string[] = [];
  for (const send of sends) if ((await send.committed) !== false) seen.push(send.id);
  return seen;
}

describe('sqlite reply outbox when a reserved delivery’s write fails after a delivery of its chat was added', () => {
  it('sends the reserved delivery before the one added behind it', async () => {
    let commitFailed: () => void = () => {};
    const failed = new Promise<void>((resolve) => {
      commitFailed = resolve;
    });
    const logger: Logger = {
      ...silentLogger,
      error: (_bindings, message) => {
        if (message.startsWith('storing a sent delivery failed')) commitFailed();
      },
      child: () => logger,
    };
    const { path, store, sender, sends } = sendingBeforeStoring({ localSend: true, logger });
    const other = new BetterSqlite3(path);
    // Remembering the first delivery's id fails, as a full disk would; a plain add does not.
    other.exec(
      "CREATE TRIGGER ended_full BEFORE INSERT ON outbox_ended BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END",
    );
    try {
      sender.start();
      const first = deliveryFixture(1, {
        channel: 'tg',
        chat: 'x',
        createdAt: Date.now(),
        rememberForMs: 60_000,
      });
      const second = deliveryFixture(2, { channel: 'tg', chat: 'x', createdAt: Date.now() });
      const addedFirst = sender.add(first);
      // E.g. an operator's reply to the same chat, while the first is reserved.
      const addedSecond = sender.add(second);
      await failed;
      other.exec('DROP TRIGGER ended_full');
      expect(await addedFirst).toBe('added');
      expect(await addedSecond).toBe('added');
      await expect.poll(() => store.outbox.pending()).toEqual({});
      expect(await seenBy(sends)).toEqual([first.origin.id, second.origin.id]);
    } finally {
      await sender.stop({ drainTimeoutMs: 0 });
      other.close();
      store.close();
    }
  });
});

describe('sqlite reply outbox when a delivery is stored while reservations hold every send slot', () => {
  it('sends it once a reservation frees its slot, without waiting for the poll', async () => {
    const { store, sender, sends } = sendingBeforeStoring({ localSend: true });
    try {
      sender.start();
      // Concurrency 4: four chats' answers reserve the four slots; a fifth chat's is stored.
      const reserved = ['a', 'b', 'c', 'd'].map((chat, index) =>
        deliveryFixture(index + 1, { channel: 'tg', chat, createdAt: Date.now(), rememberForMs: 60_000 }),
      );
      const fifth = deliveryFixture(5, { channel: 'tg', chat: 'e', createdAt: Date.now() });
      const added = [...reserved.map((delivery) => sender.add(delivery)), sender.add(fifth)];
      expect(await Promise.all(added)).toEqual(['ended', 'ended', 'ended', 'ended', 'added']);
      // The poll is 60 s here (1 s by default): the freed slots should take the fifth at once.
      await expect.poll(() => store.outbox.pending(), { timeout: 2_000 }).toEqual({});
      expect(sends.map(({ id }) => id)).toContain(fifth.origin.id);
    } finally {
      await sender.stop({ drainTimeoutMs: 0 });
      store.close();
    }
  });
});

describe('sqlite reply outbox when recording the outcome of a reserved delivery throws', () => {
  it('stores the delivery to send again and frees its chat, so that the chat’s next delivery is sent', async () => {
    let thrown = false;
    const { store, sender, sends } = sendingBeforeStoring({
      localSend: true,
      record: () => {
        if (thrown) return;
        thrown = true;
        throw new Error('a listener of the sink threw');
      },
    });
    try {
      sender.start();
      const first = deliveryFixture(1, {
        channel: 'tg',
        chat: 'x',
        createdAt: Date.now(),
        rememberForMs: 60_000,
      });
      const second = deliveryFixture(2, { channel: 'tg', chat: 'x', createdAt: Date.now() });
      await sender.add(first).catch(() => {});
      await sender.add(second);
      await expect.poll(() => store.outbox.pending(), { timeout: 3_000 }).toEqual({});
      // Nothing of the failed unit was stored: the first is sent again, ahead of the second.
      expect(await seenBy(sends)).toEqual([first.origin.id, second.origin.id]);
    } finally {
      await sender.stop({ drainTimeoutMs: 0 });
      store.close();
    }
  });
});

describe('sqlite reply outbox when the same delivery id is added while it is reserved', () => {
  it('answers duplicate to add, addAndClaim and reserve, and still stores the reservation given back', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'switchboard-outbox-'));
    folders.push(folder);
    const store = createSqliteStore({ path: join(folder, 'switchboard.db') });
    try {
      const delivery = deliveryFixture(1, { createdAt: Date.now(), rememberForMs: 60_000 });
      const reserved = store.outbox.reserve?.(delivery, Date.now());
      if (reserved === undefined || reserved === null || reserved === 'duplicate')
        throw new Error('not reserved');
      expect(await store.outbox.add({ ...delivery })).toBe('duplicate');
      expect(await store.outbox.addAndClaim({ ...delivery }, Date.now())).toEqual({
        result: 'duplicate',
        claim: null,
      });
      expect(store.outbox.reserve?.({ ...delivery }, Date.now())).toBe('duplicate');
      expect(await store.outbox.pending()).toEqual({});

      // Its own send failed: the reservation given back is stored, once.
      expect(await store.outbox.addReserved?.(reserved)).toBe('added');
      expect((await store.outbox.list(delivery.channel)).map(({ id }) => id)).toEqual([delivery.id]);
    } finally {
      store.close();
    }
  });
});

describe('sqlite reply outbox when a delivery is reserved while an add to its chat is still committing', () => {
  it('reserves nothing (the add goes first, the same id included), so nothing is sent twice or ahead', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'switchboard-outbox-'));
    folders.push(folder);
    const store = createSqliteStore({ path: join(folder, 'switchboard.db') });
    try {
      const delivery = deliveryFixture(1, { createdAt: Date.now(), rememberForMs: 60_000 });
      const later = deliveryFixture(2, { createdAt: Date.now() });
      // Not awaited: the add's write waits in the group commit.
      const added = store.outbox.add({ ...delivery });
      expect(store.outbox.reserve?.({ ...delivery }, Date.now())).toBeNull();
      expect(store.outbox.reserve?.(later, Date.now())).toBeNull();
      expect(await added).toBe('added');
      expect(store.outbox.reserve?.({ ...delivery }, Date.now())).toBeNull();
      expect((await store.outbox.claim(delivery.channel, Date.now()))?.delivery.id).toBe(delivery.id);
    } finally {
      store.close();
    }
  });
});
