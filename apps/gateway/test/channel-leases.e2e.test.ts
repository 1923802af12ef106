import { postgresReachable } from '@switchboard/testkit/postgres';
import { redisReachable } from '@switchboard/testkit/redis';
import { type FakeDiscord, startFakeDiscord } from '@switchboard/testkit/discord';
import { type FakeSlack, eventEnvelope, messageEvent, startFakeSlack } from '@switchboard/testkit/slack';
import { type FakeTelegram, startFakeTelegram } from '@switchboard/testkit/telegram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakePipeline, startFakePipeline } from './fake-pipeline.js';
import { type ServeProcess, eventually, get } from './serve-process.js';
import { describeStores, startReplicas } from './shared-stores.js';

// biome-ignore lint/suspicious/noExplicitAny: Bot API payloads are read freely
type Json = Record<string, any>;

const reachable = (await redisReachable()) && (await postgresReachable());

/** The channel lease's length (apps/gateway/src/channel-lease-timing.ts `CHANNEL_LEASE_TIMING`). */
const LEASE_MS = 15_000;

/** Where a replica runs channel `id` (`tg` by default), from its `/readyz`. */
async function stateOf(replica: ServeProcess, id = 'tg'): Promise<string | undefined> {
  const answer = await get(`${replica.url}/readyz`).catch(() => null);
  return answer?.body?.checks?.[`channel.${id}`]?.state;
}

describe.skipIf(!reachable)('telegram polling on three replicas (end to end)', () => {
  const stores = describeStores('shutdown: { drain_timeout: 5s }');
  let fake: FakeTelegram;
  let backend: FakePipeline;
  let replicas: ServeProcess[] = [];
  /** Every update pushed, by its text (one private chat per update). */
  const pushed = new Map<string, Json>();
  let nextUser = 500_000;

  function push(texts: readonly string[]): void {
    for (const text of texts) {
      nextUser += 1;
      const from = { id: nextUser, is_bot: false, first_name: `User ${nextUser}` };
      const chat = { id: nextUser, first_name: from.first_name, type: 'private' };
      pushed.set(text, fake.pushUpdate({ message: fake.message({ from, chat, text }) }));
    }
  }

  const turnsOf = (text: string) => backend.requests.filter((request) => request.text === text).length;
  const texts = (from: number, count: number, tag: string) =>
    Array.from({ length: count }, (_, index) => `${tag} ${from + index}`);
  const alive = () =>
    replicas.filter((replica) => replica.child.exitCode === null && replica.child.signalCode === null);
  async function active(): Promise<ServeProcess> {
    let found: ServeProcess | undefined;
    await eventually(async () => {
      const states = await Promise.all(alive().map((replica) => stateOf(replica)));
      found =
        states.filter((state) => state === 'active').length === 1
          ? alive()[states.indexOf('active')]
          : undefined;
      return found !== undefined;
    }, 30_000);
    return found as ServeProcess;
  }
  /** Every pushed update confirmed to Telegram and every turn of the pool settled. */
  /**
   * Nothing to poll, queued, running or waiting to be sent (the outbox is shared: any replica
   * counts it all). A kill then finds no send under way, which could reach the platform twice
   * (at least once, docs/design.md §2 "Outbox"): these tests are about polling takeover.
   */
  async function quiet(): Promise<void> {
    await eventually(async () => {
      if (fake.pendingUpdates().length > 0) return false;
      const url = alive()[0]?.url;
      const queues = await get(`${url}/admin/queues`);
      if (queues.body?.pending !== 0 || queues.body?.inflight !== 0) return false;
      const metrics = await get(`${url}/metrics`);
      return !/^switchboard_outbox_pending\{/m.test(String(metrics.body));
    }, 60_000);
  }

  beforeAll(async () => {
    fake = await startFakeTelegram();
    backend = await startFakePipeline();
    const yaml = stores.yaml(`channels:
  - { id: tg, type: telegram, token: "${fake.token}", mode: polling, api_root: "${fake.url}" }
pipelines: [{ id: bot, type: http, url: "${backend.url}" }]
routing: { default: bot }
`);
    // One after the other: the first to start takes the lease.
    replicas.push(...(await startReplicas(3, yaml)));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(alive().map((replica) => replica.stop('SIGKILL')));
    replicas = [];
    await fake?.close();
    await backend?.close();
    await stores.remove();
  });

  describe('when all three run', () => {
    it('polls on one replica only; the others are standby and ready, and every replica names the holder', async () => {
      const holder = await active();
      expect(holder).toBe(replicas[0]);
      const acquired = holder.logs.find(
        (line) => line.msg === 'channel lease acquired: starting the connection',
      );
      for (const standby of replicas.slice(1)) {
        const ready = await get(`${standby.url}/readyz`);
        expect(ready.status).toBe(200);
        expect(ready.body.checks['channel.tg']).toMatchObject({ ok: true, state: 'standby' });
        const queues = await get(`${standby.url}/admin/queues`);
        expect(queues.body.channels).toEqual([
          {
            id: 'tg',
            type: 'telegram',
            state: 'standby',
            holder: acquired?.replica,
            epoch: acquired?.epoch,
            expires_at: expect.any(Number),
          },
        ]);
        expect(queues.body.replicas.map((replica: { id: string }) => replica.id)).toContain(
          acquired?.replica,
        );
      }
      const roles = await Promise.all(
        replicas.map(async (replica) => {
          const metrics = await get(`${replica.url}/metrics`);
          return /switchboard_channel_active\{channel="tg"\} (\d)/.exec(metrics.body)?.[1];
        }),
      );
      expect(roles, 'switchboard_channel_active per replica').toEqual(['1', '0', '0']);
      push(texts(1, 10, 'first'));
      await eventually(() => texts(1, 10, 'first').every((text) => turnsOf(text) === 1), 20_000);
    });
  });

  describe('when the poller stops gracefully', () => {
    it('hands the lease over at once: another replica polls within a few seconds, not a lease', async () => {
      const holder = await active();
      await quiet();
      const stoppedAt = Date.now();
      const exited = holder.stop('SIGTERM');
      const next = await active();
      const handOverMs = Date.now() - stoppedAt;
      console.log(`graceful hand-over: ${handOverMs} ms`);
      expect(next).not.toBe(holder);
      expect(handOverMs).toBeLessThan(3_000);
      expect(await exited).toBe(0);
      expect(holder.logs.some((line) => line.msg === 'channel lease released')).toBe(true);
      push(texts(1, 10, 'second'));
      await eventually(() => texts(1, 10, 'second').every((text) => turnsOf(text) === 1), 20_000);
    });
  });

  describe('when the poller is killed (kill -9)', () => {
    it('another replica takes over within one lease plus a few seconds, and each update_id makes one turn although fetched again', {
      timeout: 120_000,
    }, async () => {
      const holder = await active();
      push(texts(1, 5, 'before the kill'));
      await eventually(() => texts(1, 5, 'before the kill').every((text) => turnsOf(text) === 1), 20_000);
      await quiet();
      const killedAt = Date.now();
      await holder.stop('SIGKILL');
      // Telegram hands out again what the dead poller fetched but never confirmed: pushed again
      // here, with their update_ids, they reach the next poller a second time.
      const again = texts(1, 5, 'before the kill').map((text) => pushed.get(text) as Json);
      for (const update of again) fake.pushUpdate(update);
      push(texts(1, 10, 'third'));
      const next = await active();
      const takeoverMs = Date.now() - killedAt;
      console.log(`takeover after kill -9: ${takeoverMs} ms (lease ${LEASE_MS} ms)`);
      expect(next).not.toBe(holder);
      expect(takeoverMs).toBeLessThan(LEASE_MS + 3_000);
      await eventually(() => texts(1, 10, 'third').every((text) => turnsOf(text) === 1), 20_000);
      await quiet();
      for (const update of again) expect(fake.fetchCounts().get(update.update_id)).toBeGreaterThanOrEqual(2);
      expect([...pushed.keys()].filter((text) => turnsOf(text) !== 1)).toEqual([]);
      expect(backend.requests).toHaveLength(pushed.size);
      // Replies go out from whichever replica's sender claims them, standbys included; a chat whose
      // head the killed replica had claimed waits for that claim's lease (send_timeout + 15 s).
      await eventually(() => fake.sentMessages().length >= pushed.size, 60_000, 'every reply sent');
      expect(
        fake
          .sentMessages()
          .map((sent) => sent.body.text)
          .sort(),
      ).toEqual([...pushed.keys()].map((text) => `echo: ${text}`).sort());
      expect(next.logs.filter((line) => line.level >= 50)).toEqual([]);
    });
  });

  describe('afterwards', () => {
    it('never had two getUpdates open at once', () => {
      expect(fake.maxOpenPolls()).toBe(1);
    });
  });
});

describe.skipIf(!reachable)('discord gateway on two replicas (end to end)', () => {
  const stores = describeStores('shutdown: { drain_timeout: 5s }');
  let fake: FakeDiscord;
  const replicas: ServeProcess[] = [];

  beforeAll(async () => {
    fake = await startFakeDiscord();
    const yaml =
      stores.yaml(`channels: [{ id: dc, type: discord, token: "${fake.token}", api_url: "${fake.url}" }]
pipelines: [{ id: echo, type: echo }]
routing: { default: echo }
`);
    replicas.push(...(await startReplicas(2, yaml)));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(replicas.map((replica) => replica.stop('SIGKILL')));
    await fake?.close();
    await stores.remove();
  });

  describe('when the holder stops gracefully', () => {
    it('one gateway session at a time: the standby identifies at once and answers the next DM once', async () => {
      const [first, second] = replicas as [ServeProcess, ServeProcess];
      expect(await stateOf(first, 'dc')).toBe('active');
      expect(await stateOf(second, 'dc')).toBe('standby');
      expect(fake.stats.identifies).toBe(1);
      const stoppedAt = Date.now();
      const exited = first.stop('SIGTERM');
      await eventually(async () => (await stateOf(second, 'dc')) === 'active' && fake.connected(), 10_000);
      console.log(`discord hand-over: ${Date.now() - stoppedAt} ms`);
      expect(Date.now() - stoppedAt).toBeLessThan(5_000);
      expect(await exited).toBe(0);
      expect(fake.stats.identifies).toBe(2);
      const alice = { id: '234567890123456789', username: 'alice' };
      const sent = fake.messageCreate({
        channel_id: '1240000000000000009',
        channel_type: 1,
        author: alice,
        content: 'hi',
      });
      await eventually(() => fake.sentMessages().length === 1);
      expect(fake.sentMessages()[0]?.body).toMatchObject({ message_reference: { message_id: sent.id } });
    });
  });
});

describe.skipIf(!reachable)('slack socket mode on two replicas (end to end)', () => {
  const stores = describeStores('shutdown: { drain_timeout: 5s }');
  let fake: FakeSlack;
  const replicas: ServeProcess[] = [];

  beforeAll(async () => {
    fake = await startFakeSlack();
    const yaml = stores.yaml(`channels:
  - { id: sl, type: slack, bot_token: xoxb-test, signing_secret: shh-secret, app_token: xapp-test, bot_user_id: UBOT, api_url: "${fake.apiUrl}" }
pipelines: [{ id: echo, type: echo }]
routing: { default: echo }
`);
    replicas.push(...(await startReplicas(2, yaml)));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(replicas.map((replica) => replica.stop('SIGKILL')));
    await fake?.close();
    await stores.remove();
  });

  describe('when the holder stops gracefully', () => {
    it('one socket at a time: the standby connects at once and its events are answered once', async () => {
      const [first, second] = replicas as [ServeProcess, ServeProcess];
      await eventually(
        async () => (await stateOf(first, 'sl')) === 'active' && fake.socketConnections() === 1,
      );
      expect(await stateOf(second, 'sl')).toBe('standby');
      expect(fake.callsTo('apps.connections.open')).toHaveLength(1);
      const stoppedAt = Date.now();
      const exited = first.stop('SIGTERM');
      await eventually(
        async () => (await stateOf(second, 'sl')) === 'active' && fake.socketConnections() === 1,
        10_000,
      );
      console.log(`slack socket mode hand-over: ${Date.now() - stoppedAt} ms`);
      expect(Date.now() - stoppedAt).toBeLessThan(5_000);
      expect(await exited).toBe(0);
      expect(fake.callsTo('apps.connections.open')).toHaveLength(2);
      await fake.pushSocketEvent(
        eventEnvelope(messageEvent({ channel: 'D0LEASE', text: 'after the hand-over' })),
      );
      await eventually(() => fake.callsTo('chat.postMessage').length === 1);
      expect(fake.callsTo('chat.postMessage')[0]).toMatchObject({ body: { channel: 'D0LEASE' } });
    });
  });
});
