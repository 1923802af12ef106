/** One exchanged message of a conversation, as chat-completions APIs expect it. */
export interface HistoryEntry {
  role: 'user' | 'assistant';
  content: string;
}

/**
 * Per-session conversation history for pipelines that keep context (the `openai` pipeline's
 * `history_turns`). Keyed by session and pipeline so two pipelines never share a context.
 * Ordering: `recent` returns entries oldest first. The store owns its connection.
 */
export interface HistoryStore {
  append(session: string, pipeline: string, entries: readonly HistoryEntry[]): Promise<void>;
  /** The last `limit` entries, oldest first; empty when there are none. */
  recent(session: string, pipeline: string, limit: number): Promise<HistoryEntry[]>;
}
