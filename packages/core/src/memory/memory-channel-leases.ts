import type { ChannelLease, ChannelLeases } from '../ports/channel-lease.js';

/**
 * `ChannelLeases` of one process (`store: memory` or `sqlite`): nobody else contends, so the
 * gateway always acquires. Same semantics as a shared store, so one code path serves both.
 */
export function createMemoryChannelLeases(): ChannelLeases {
  // The store's clock: the process's own.
  const now = Date.now;
  const leases = new Map<string, ChannelLease>();
  // Kept after a release, so that the next holder's epoch is still greater.
  const epochs = new Map<string, number>();

  const inForce = (lease: ChannelLease | undefined): lease is ChannelLease =>
    lease !== undefined && lease.expiresAt > now();
  const isHeld = (lease: ChannelLease) => {
    const current = leases.get(lease.channel);
    return inForce(current) && current.holder === lease.holder && current.epoch === lease.epoch;
  };

  return {
    async acquire(channel, holder, ttlMs) {
      const current = leases.get(channel);
      if (inForce(current) && current.holder !== holder) return { ...current };
      const epoch = (epochs.get(channel) ?? 0) + 1;
      epochs.set(channel, epoch);
      const lease = { channel, holder, epoch, expiresAt: now() + ttlMs };
      leases.set(channel, lease);
      return { ...lease };
    },
    async renew(lease, ttlMs) {
      if (!isHeld(lease)) return null;
      const renewed = { ...lease, expiresAt: now() + ttlMs };
      leases.set(lease.channel, renewed);
      return { ...renewed };
    },
    async release(lease) {
      if (!isHeld(lease)) return false;
      leases.delete(lease.channel);
      return true;
    },
    async holders() {
      return [...leases.values()]
        .filter(inForce)
        .map((lease) => ({ ...lease }))
        .sort((a, b) => a.channel.localeCompare(b.channel));
    },
  };
}
