import type { LeaseTiming } from '@switchboard/core';
import { DEFAULT_LEASE_TIMING } from '@switchboard/store-redis/lease-timing';

/**
 * Lease timing of single-owner connections, ms: the Redis pool's turn leases', so a dead
 * replica's turns and connections move on together. Fencing stops the connection
 * `fenceAfterMs` after the last successful renewal, well before the lease expires elsewhere
 * (a Redis command times out after 2 s; a connection stops within a second or two).
 */
export const CHANNEL_LEASE_TIMING: LeaseTiming = DEFAULT_LEASE_TIMING;
