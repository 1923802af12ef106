import { createLangBotScheduler } from '../baselines/langbot.js';
import { createVikingBotScheduler } from '../baselines/vikingbot.js';
import type { SchedulerFactory } from './scheduler.js';
import { createSwitchboardScheduler } from './switchboard-scheduler.js';

export interface NamedScheduler {
  name: 'switchboard' | 'langbot' | 'vikingbot';
  create: SchedulerFactory;
}

/** Switchboard first; the ratios divide its figures by each baseline's. */
export const SCHEDULERS: readonly NamedScheduler[] = [
  { name: 'switchboard', create: createSwitchboardScheduler },
  { name: 'langbot', create: createLangBotScheduler },
  { name: 'vikingbot', create: createVikingBotScheduler },
];

/** The limits the baselines are compared at, the gateway's defaults: 20 turns at once, one per session. */
export const LIMITS = { globalLimit: 20, sessionLimit: 1 } as const;
