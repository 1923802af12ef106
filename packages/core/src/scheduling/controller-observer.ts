import type { Turn } from '../ports/query-pool.js';
import type { Delivery } from '../ports/reply-outbox.js';

/** How a turn ended, for metrics; `lost`: its lease was taken over, another replica settles it. */
export type TurnResult =
  | 'completed'
  | 'retried'
  | 'dead_lettered'
  | 'dropped'
  | 'abandoned'
  | 'lost'
  /** Its session was in handoff: the messages wait for an operator instead. */
  | 'handed_off';

/** Hooks for metrics and status tracking; every method is optional and must not throw. */
export interface ControllerObserver {
  turnStarted?(turn: Turn): void;
  turnEnded?(turn: Turn, result: TurnResult, durationMs: number): void;
  /** A turn will run again after `delayMs`. */
  turnRetried?(turn: Turn, delayMs: number): void;
  /** A turn's replies were stored in the outbox and the turn completed; they are on their way. */
  repliesStored?(delivery: Delivery): void;
}
