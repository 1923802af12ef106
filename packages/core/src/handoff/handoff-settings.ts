import { z } from 'zod';
import { durationMs } from '../schema/duration.js';
import { numeric } from '../schema/numeric.js';

/** `handoff:` — how long a handoff lasts without an operator, and how much it keeps. */
export const HandoffSettingsSchema = z
  .strictObject({
    /** Without operator activity (beginning, a reply) this long, a handoff ends by itself. */
    idle_timeout: durationMs({ min: '1s', max: '168h' }).prefault('30m'),
    /** How that end resumes: `bot` hands the held messages to the bot as one turn, `skip` leaves them handled. */
    idle_resume: z.enum(['bot', 'skip']).default('bot'),
    /** Messages one handoff holds, and operator replies (as many again); past it, a new message is dropped (`queue_overflow`). */
    max_entries: numeric(z.number().int().min(1).max(10_000)).prefault(500),
  })
  .transform(({ idle_timeout, idle_resume, max_entries }) => ({
    idleTimeoutMs: idle_timeout,
    idleResume: idle_resume,
    maxEntries: max_entries,
  }));
export type HandoffSettings = z.output<typeof HandoffSettingsSchema>;

/** How a handoff ends: `bot` hands the held messages to the bot as one turn, `skip` leaves them handled. */
export type HandoffResume = HandoffSettings['idleResume'];
