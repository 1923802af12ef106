import { execFileSync } from 'node:child_process';

/** Whether a process with `pid` exists (a zombie too): signal 0 checks without sending anything. */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** `ps` state letters of `pid` (`Z` for a zombie), or null when there is no such process. */
export function processState(pid: number): string | null {
  try {
    return execFileSync('ps', ['-o', 'stat=', '-p', String(pid)], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}
