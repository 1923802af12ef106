import { randomUUID } from 'node:crypto';
import { handoffStoreContract } from '@switchboard/contracts';
import type { InboundMessage } from '@switchboard/core';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FAIL_FAST_OPTIONS, type RedisHandoffStore, createRedisHandoffStore } from '../src/index.js';
import { REDIS_URL, contractStores, poolKeyNames, redisReachable, removePoolKeys } from './redis-harness.js';

const reachable = await redisReachable();

const SESSION = 'telegram:tg:person:42';
const HOLD = { at: 1100, maxEntries: 100 };

function message(id: string): InboundMessage {
  return {
    id,
    platform: 'telegram',
    channel: 'tg',
    chat: { type: 'person', id: '42' },
    sender: { id: '42', is_bot: false },
    elements: [{ type: 'text', text: id }],
    text: id,
    mentions_bot: false,
    platform_message_id: id,
    received_at: 1,
  };
}

describe.skipIf(!reachable)('createRedisHandoffStore', () => {
  handoffStoreContract('redis', () =>
    contractStores(
      (prefix) => createRedisHandoffStore({ url: REDIS_URL, prefix }),
      (store) => store.close(),
      { tag: 'sb-test' },
    ),
  );

  describe('with a connection of the caller', () => {
    let prefix: string;
    let client: Redis;
    let store: RedisHandoffStore;

    beforeEach(async () => {
      prefix = `sb-test-${randomUUID()}`;
      client = new Redis(REDIS_URL, FAIL_FAST_OPTIONS);
      store = await createRedisHandoffStore({ client, prefix });
    });
    afterEach(async () => {
      await store.close();
      client.disconnect();
      await removePoolKeys(REDIS_URL, prefix);
    });

    describe('when a session is not in handoff', () => {
      it('answers hold with one command', async () => {
        const sent = vi.spyOn(client, 'sendCommand');
        expect(await store.hold(SESSION, [message('m1')], HOLD)).toBe('not_in_handoff');
        // A small EXISTS: the turn's messages do not travel to Redis to be told nothing.
        expect(sent.mock.calls.map(([command]) => command.name)).toEqual(['exists']);
      });
    });

    describe('when a handoff ends', () => {
      it('leaves no key of it behind, in the indexes neither', async () => {
        await store.begin(SESSION, { reason: 'asked', by: 'rule:human', at: 1000 });
        await store.hold(SESSION, [message('m1')], HOLD);
        await store.reply(SESSION, { id: 'r1', operator: 'ann', text: 'hi', at: 1200 }, { maxEntries: 100 });
        // The prefix's data format is recorded when the store opens; it is no key of a handoff.
        const handoffKeys = async () =>
          (await poolKeyNames(client, prefix)).filter((key) => key !== `{${prefix}}:format`);
        expect(await handoffKeys()).toHaveLength(5);
        await store.end(SESSION);
        expect(await handoffKeys()).toEqual([]);
      });
    });
  });
});
