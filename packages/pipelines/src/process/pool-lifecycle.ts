import type { SlotState } from './worker-slot.js';

/**
 * The lifecycle of a `process` pipeline, from its slots (buzz's PoolLifecycle): `listening`
 * while no worker runs and the next turn may start one (before the first turn, or a slot failed
 * while another is idle), `waking` while a worker starts or restarts after a crash and none is
 * ready (turns wait for it), `ready` while any worker is, `failed` while every slot failed to
 * start and waits out its restart backoff, `stopped` after the drain. Only `failed` makes
 * `/readyz` answer 503: then no turn can run.
 */
export type PoolState = 'listening' | 'waking' | 'ready' | 'failed' | 'stopped';

export function poolStateOf(slots: readonly SlotState[]): PoolState {
  if (slots.includes('ready')) return 'ready';
  if (slots.includes('starting') || slots.includes('restarting')) return 'waking';
  if (slots.includes('stopped')) return 'stopped';
  if (slots.length > 0 && slots.every((slot) => slot === 'failed')) return 'failed';
  return 'listening';
}
