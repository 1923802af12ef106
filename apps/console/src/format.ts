/** A timestamp (ms) as local date and time to the second. */
export function formatTime(at: number): string {
  return new Date(at).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' });
}

/** A duration (ms) as the largest fitting unit: `850 ms`, `12.4 s`, `3 min`, `2 h`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 3_600_000)} h`;
}

/** An outcome with its reason: `dead_lettered (fatal_error)`. */
export function outcomeText(outcome: string, reason: string | null): string {
  return reason === null ? outcome : `${outcome} (${reason})`;
}

/** A sender as `Alice (111)`, or its id alone when it has no name. */
export function senderText(sender: { id: string; name: string | null }): string {
  return sender.name === null ? sender.id : `${sender.name} (${sender.id})`;
}
