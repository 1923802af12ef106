/** Feishu edits a message at most 20 times ("一条消息最多可编辑 20 次"); the 21st is refused. */
export const MAX_EDITS = 20;

/** Messages whose edits are remembered; a stream's draft is edited within minutes. */
const MAX_MESSAGES = 1_000;

/** The edits made to the bot's messages by this process, for the messages edited most recently. */
export interface EditCounts {
  /** Edits made to `ref` so far (0 when unknown or forgotten). */
  of(ref: string): number;
  /** Counts one more edit of `ref`. */
  add(ref: string): void;
  /** Forgets `ref`: its answer is final. */
  forget(ref: string): void;
}

/** Edit counts of at most 1 000 messages: the one edited least recently is forgotten first. */
export function createEditCounts(): EditCounts {
  const counts = new Map<string, number>();
  return {
    of: (ref) => counts.get(ref) ?? 0,
    add(ref) {
      const count = (counts.get(ref) ?? 0) + 1;
      counts.delete(ref);
      counts.set(ref, count);
      if (counts.size > MAX_MESSAGES) counts.delete(counts.keys().next().value as string);
    },
    forget(ref) {
      counts.delete(ref);
    },
  };
}
