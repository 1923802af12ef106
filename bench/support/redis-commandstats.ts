import type { Redis } from 'ioredis';

/** `calls` of every command Redis has run, by command name, and the µs EVALSHA took (`INFO commandstats`). */
export async function commandStats(admin: Redis): Promise<{ calls: Map<string, number>; evalshaUs: number }> {
  const calls = new Map<string, number>();
  let evalshaUs = 0;
  for (const [, command, count, usec] of (await admin.info('commandstats')).matchAll(
    /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm,
  )) {
    calls.set(command as string, Number(count));
    if (command === 'evalsha') evalshaUs = Number(usec);
  }
  return { calls, evalshaUs };
}

/** Calls per command between two readings, per cycle; commands not called are left out. */
export function callsPerCycle(
  before: Map<string, number>,
  after: Map<string, number>,
  cycles: number,
): Record<string, number> {
  const perCycle: Record<string, number> = {};
  for (const [command, count] of after) {
    const delta = count - (before.get(command) ?? 0);
    if (delta > 0) perCycle[command] = delta / cycles;
  }
  return perCycle;
}
