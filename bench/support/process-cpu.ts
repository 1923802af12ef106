import { readFileSync } from 'node:fs';

/**
 * CPU time (user + system) a process has used so far, in ms, from `/proc/<pid>/stat`; null where
 * there is no procfs. It shows whether a server was saturated: a server the client cannot keep
 * busy uses less CPU than its run lasted.
 */
export function cpuTimeMs(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // Fields after the parenthesized command name; utime and stime are the 12th and 13th of them.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticksPerS = 100; // USER_HZ, 100 on Linux
  return ((Number(fields[11]) + Number(fields[12])) / ticksPerS) * 1000;
}
