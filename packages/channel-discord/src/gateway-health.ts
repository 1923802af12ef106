import type { ChannelHealth } from '@switchboard/core';

/**
 * The state of the gateway connection as `/readyz` reports it. discord.js reconnects on its own
 * (resume or re-identify); the channel feeds its shard events in here, so the gateway is ready
 * only while every shard's connection is, and says which one is not and why.
 */
export interface GatewayHealth {
  /** A shard finished READY (with its guilds) or RESUMED. */
  shardUp(shardId: number): void;
  /** A shard lost its connection and discord.js is reconnecting it. */
  shardReconnecting(shardId: number): void;
  /** A shard closed with a code discord.js does not recover from (bad token, disallowed intents…). */
  shardDisconnected(shardId: number, closeCode: number): void;
  /** A (new) start logs in: forgets the shards of an earlier run. */
  starting(): void;
  stopped(): void;
  health(): ChannelHealth;
}

type Lifecycle = 'starting' | 'running' | 'stopped';

export function createGatewayHealth(): GatewayHealth {
  let lifecycle: Lifecycle = 'starting';
  const down = new Map<number, string>();
  const up = new Set<number>();

  return {
    shardUp(shardId) {
      lifecycle = lifecycle === 'stopped' ? lifecycle : 'running';
      down.delete(shardId);
      up.add(shardId);
    },
    shardReconnecting(shardId) {
      up.delete(shardId);
      down.set(shardId, `shard ${shardId} reconnecting`);
    },
    shardDisconnected(shardId, closeCode) {
      up.delete(shardId);
      down.set(shardId, `shard ${shardId} disconnected for good (close code ${closeCode})`);
    },
    starting() {
      lifecycle = 'starting';
      down.clear();
      up.clear();
    },
    stopped() {
      lifecycle = 'stopped';
    },
    health() {
      if (lifecycle === 'starting') return { ready: false, detail: 'connecting to the gateway' };
      if (lifecycle === 'stopped') return { ready: false, detail: 'stopped' };
      if (down.size > 0) return { ready: false, detail: [...down.values()].join('; ') };
      return { ready: true, detail: `gateway connected (${up.size} shard${up.size === 1 ? '' : 's'})` };
    },
  };
}
