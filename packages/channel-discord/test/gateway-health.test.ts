import { describe, expect, it } from 'vitest';
import { createGatewayHealth } from '../src/gateway-health.js';

describe('createGatewayHealth', () => {
  describe('when no shard is ready yet', () => {
    it('is not ready and says it is connecting', () => {
      expect(createGatewayHealth().health()).toEqual({ ready: false, detail: 'connecting to the gateway' });
    });
  });

  describe('when the shard is ready', () => {
    it('is ready', () => {
      const health = createGatewayHealth();
      health.shardUp(0);
      expect(health.health()).toEqual({ ready: true, detail: 'gateway connected (1 shard)' });
    });
  });

  describe('when a shard reconnects', () => {
    it('is not ready until it is up again, naming the shard', () => {
      const health = createGatewayHealth();
      health.shardUp(0);
      health.shardUp(1);
      health.shardReconnecting(1);
      expect(health.health()).toEqual({ ready: false, detail: 'shard 1 reconnecting' });
      health.shardUp(1);
      expect(health.health()).toEqual({ ready: true, detail: 'gateway connected (2 shards)' });
    });
  });

  describe('when a shard is closed for good', () => {
    it('reports the close code', () => {
      const health = createGatewayHealth();
      health.shardUp(0);
      health.shardDisconnected(0, 4004);
      expect(health.health()).toEqual({
        ready: false,
        detail: 'shard 0 disconnected for good (close code 4004)',
      });
    });
  });

  describe('when the channel stopped', () => {
    it('stays not ready even if a late shard event arrives', () => {
      const health = createGatewayHealth();
      health.shardUp(0);
      health.stopped();
      health.shardUp(0);
      expect(health.health()).toEqual({ ready: false, detail: 'stopped' });
    });
  });
});
