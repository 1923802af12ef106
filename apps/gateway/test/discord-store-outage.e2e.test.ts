import { type FakeDiscord, startFakeDiscord } from '@switchboard/testkit/discord';
import { postgresReachable } from '@switchboard/testkit/postgres';
import { redisReachable, startPrivateRedis } from '@switchboard/testkit/redis';
import { describe, expect, it } from 'vitest';
import {
  type ServeProcess,
  eventually,
  get,
  startServe,
  tempDir,
  useCleanups,
  writeConfig,
} from './serve-process.js';
import { sharedStores, storesConfig } from './shared-stores.js';

// Discord never sends a message again, so one arriving while the store is away must wait for it
// (docs/design.md §3): the real `switchboard serve` on a Redis of its own, which the test stops
// and starts again, with the fake Discord's gateway pushing the message meanwhile.

const reachable = (await redisReachable()) && (await postgresReachable());

const DM = '1240000000000000009';
const alice = { id: '234567890123456789', username: 'alice' };

/** Where the replica runs channel `dc`, from its `/readyz`. */
async function stateOfDiscord(gateway: ServeProcess): Promise<string | undefined> {
  const answer = await get(`${gateway.url}/readyz`).catch(() => null);
  return answer?.body?.checks?.['channel.dc']?.state;
}

describe.skipIf(!reachable)('discord channel while the store is unavailable (end to end)', () => {
  const cleanup = useCleanups();

  describe('when Redis is away as a message arrives, and back a moment later', () => {
    it('keeps the message, accepts it once Redis answers, and answers it once; nothing is dropped', {
      timeout: 120_000,
    }, async () => {
      const redis = await startPrivateRedis();
      cleanup(() => redis.remove());
      const stores = sharedStores(cleanup, { redisUrl: redis.url });
      const fake: FakeDiscord = await startFakeDiscord();
      cleanup(() => fake.close());
      const dir = tempDir();
      const configPath = writeConfig(
        dir,
        storesConfig(
          stores,
          `channels: [{ id: dc, type: discord, token: "${fake.token}", api_url: "${fake.url}" }]
pipelines: [{ id: echo, type: echo }]
routing: { default: echo }
`,
        ),
      );
      const gateway = await startServe({ dir, configPath });
      cleanup(() => gateway.stop('SIGKILL'));
      await eventually(async () => (await stateOfDiscord(gateway)) === 'active' && fake.connected(), 30_000);

      await redis.stop();
      const sent = fake.messageCreate({ channel_id: DM, channel_type: 1, author: alice, content: 'kept' });
      // Its accept failed with SB_STORE_UNAVAILABLE: it waits for the next try (or was dropped).
      const KEPT = 'store unavailable: message kept, retrying';
      const DROPPED = 'message could not be accepted: dropped';
      const fate = await eventually(
        () => gateway.logs.find((line) => line.msg === KEPT || line.msg === DROPPED)?.msg,
        20_000,
        'the failed accept logged',
      );
      expect(fate).toBe(KEPT);
      // Well within the channel lease's fencing (10 s without a renewal): the connection stays.
      await redis.start();

      await eventually(() => fake.sentMessages().length >= 1, 30_000, 'the answer posted');
      expect(fake.sentMessages().map((message) => message.body)).toEqual([
        expect.objectContaining({
          content: 'kept',
          message_reference: expect.objectContaining({ message_id: sent.id }),
        }),
      ]);
      const accepted = gateway.logs.filter((line) => line.msg === 'store answers again: message accepted');
      expect(accepted).toEqual([expect.objectContaining({ platformMessageId: sent.id, result: 'queued' })]);
      expect(gateway.logs.filter((line) => line.msg === 'message could not be accepted: dropped')).toEqual(
        [],
      );
      const dropped = await eventually(async () => {
        const answer = await get(`${gateway.url}/admin/audit?outcome=dropped`);
        return answer.status === 200 && answer.body;
      });
      expect(dropped.items).toEqual([]);
    });
  });
});
