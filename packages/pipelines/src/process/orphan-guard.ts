/**
 * Process groups of the workers alive in this process. The gateway stops its workers in its
 * drain; one that exits without it (`process.exit` after an uncaught exception or a second signal)
 * would leave them running, reparented — and a worker that ignores its stdin closing would never
 * end. An `exit` handler can only run synchronous code: it SIGKILLs each group still listed.
 */
const liveGroups = new Set<number>();

function killLiveGroups(): void {
  for (const pid of liveGroups) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // The group is gone already (ESRCH).
    }
  }
}

/**
 * Kills the process group `pid` if this process exits while it is listed; returns the function
 * that unlists it (once the worker is gone).
 */
export function guardProcessGroup(pid: number): () => void {
  if (liveGroups.size === 0) process.on('exit', killLiveGroups);
  liveGroups.add(pid);
  return () => {
    if (!liveGroups.delete(pid)) return;
    if (liveGroups.size === 0) process.off('exit', killLiveGroups);
  };
}
