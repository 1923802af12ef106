import type { SlotState } from './worker-slot.js';

/**
 * The lifecycle of a `process` pipeline, from its slots (seed 002's PoolLifecycle): `listening`
 * until the first turn (no process at all), `waking` while a worker starts and none is ready,
 * `ready` while any worker is, `failed` while none is and a restart waits out its backoff,
 * `stopped` after the drain. Only `failed` makes `/readyz` answer 503.
 */
export type PoolState = 'listening' | 'waking' | 'ready' | 'failed' | 'stopped';

export function poolStateOf(slots: readonly SlotState[]): PoolState {
  if (slots.includes('ready')) return 'ready';
  if (slots.includes('starting')) return 'waking';
  if (slots.includes('failed')) return 'failed';
  if (slots.includes('stopped')) return 'stopped';
  return 'listening';
}
