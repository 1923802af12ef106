import type { InboundMessage } from '../model/message.js';
import type { Turn } from '../ports/query-pool.js';
import type { SessionKey } from '../model/session-key.js';

/** What a pipeline receives: one turn, possibly a merged burst of messages. */
export interface Query {
  /**
   * The turn id, shared by the messages of a merged burst and the same on every attempt of the
   * same messages, also after a restart: backends deduplicate on it (`turnIdOf`). A replayed dead
   * letter is a new request with a new id.
   */
  id: string;
  /** 1 on the first run; higher when the turn is a retry or a re-run after a crash. */
  attempt: number;
  pipeline: string;
  /** True when any merged message was routed by a rule rather than the default. */
  routedByRule: boolean;
  session: SessionKey;
  /** The first message: its sender, chat and raw event are the reply context. */
  message: InboundMessage;
  /** The texts of all messages joined with `\n`. */
  text: string;
  /** The merged originals, in arrival order. */
  messages: InboundMessage[];
}

/**
 * Merges a claimed turn into one query (LangBot's `_merge_messages`): texts joined with
 * a newline, the first message's event, sender and reply context kept, `routedByRule` = any.
 */
export function aggregate(turn: Omit<Turn, 'lease'>): Query {
  const first = turn.messages[0];
  if (first === undefined) throw new TypeError(`turn ${turn.id} has no messages`);
  // One pass, no callbacks: this runs once per turn.
  const messages: InboundMessage[] = [];
  let text = first.message.text;
  let routedByRule = false;
  for (const queued of turn.messages) {
    if (messages.length > 0) text += `\n${queued.message.text}`;
    messages.push(queued.message);
    routedByRule ||= queued.routedByRule;
  }
  return {
    id: turn.id,
    attempt: turn.attempt,
    pipeline: turn.pipeline,
    routedByRule,
    session: turn.session,
    message: first.message,
    text,
    messages,
  };
}
