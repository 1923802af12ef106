import type { AuditConfig } from '@switchboard/config';
import type { ControllerObserver, InboundMessage, Outcome, Reply, TurnResult } from '@switchboard/core';
import { keptReplies, keptText } from './stored-text.js';

/** Messages the trail remembers; past it the oldest is forgotten. */
const DEFAULT_MAX_MESSAGES = 1_000;
/** Attempts kept per message: a message retried more often keeps its first ones. */
const MAX_TURNS_PER_MESSAGE = 20;
/**
 * Longest text the trail keeps of a message or a reply, whatever `audit.store_text` says: 10 000
 * messages of unbounded text would hold the replica's memory hostage; the audit log has the rest.
 */
export const MAX_TRAIL_TEXT_CHARS = 500;
/** What the trail and a message's path keep of its replies: a bounded few, each cut. */
export const TRAIL_REPLY_LIMITS = { maxReplies: 20, maxChars: MAX_TRAIL_TEXT_CHARS };

/** One run of a turn, as the trail saw it on this replica. */
export interface TrailTurn {
  id: string;
  pipeline: string;
  attempt: number;
  /** Every message of the turn (a merged burst has several), in arrival order. */
  messages: string[];
  started_at: number;
  ended_at: number | null;
  result: TurnResult | null;
  duration_ms: number | null;
  /** Set when the turn will run again after this wait. */
  retry_delay_ms: number | null;
}

/** What the trail knows of one message. */
export interface TrailEntry {
  received: {
    channel: string;
    platform: string;
    chat_type: string;
    chat_id: string;
    sender_id: string;
    sender_name: string | null;
    /** As `audit.store_text` keeps it, cut to `MAX_TRAIL_TEXT_CHARS`. */
    text: string | null;
    at: number;
  };
  session: string | null;
  turns: TrailTurn[];
  outcome: {
    kind: Outcome['kind'];
    reason: string | null;
    rule: string | null;
    pipeline: string | null;
    error: string | null;
    /** Only under `audit.store_text: full`, within `TRAIL_REPLY_LIMITS`. */
    replies: Reply[];
    at: number;
  } | null;
}

/** The recent path of messages through this replica, for `GET /admin/messages/{id}`. */
export interface MessageTrail {
  /** Feeds the trail from the controller: turns, attempts, retries. */
  observer: Required<Pick<ControllerObserver, 'turnStarted' | 'turnEnded' | 'turnRetried'>>;
  /** Feeds the trail from the outcome bus. */
  recordOutcome(outcome: Outcome): void;
  /** What the trail holds of a message, or null when it never passed here or was forgotten. */
  get(messageId: string): TrailEntry | null;
}

/**
 * A bounded, in-memory trail of recent messages: which turns ran them, each attempt's result and
 * retry wait, the other messages of their turn, their outcome. Per replica and lost on restart
 * (the audit log and the status store are what survives); with a shared pool a turn run by
 * another replica is missing here. It follows the audit recorder's rules: text as
 * `audit.store_text` keeps it, replies only when text is kept whole, `ignored` outcomes only under
 * `audit.ignored`; and it cuts every text to `MAX_TRAIL_TEXT_CHARS`.
 */
export function createMessageTrail(options: {
  storeText: AuditConfig['storeText'];
  recordIgnored: AuditConfig['recordIgnored'];
  maxMessages?: number;
  now?: () => number;
}): MessageTrail {
  const maxMessages = options.maxMessages ?? DEFAULT_MAX_MESSAGES;
  const now = options.now ?? Date.now;
  const entries = new Map<string, TrailEntry>();
  // The running attempt of each turn id: a turn runs once at a time.
  const running = new Map<string, TrailTurn>();

  function entryOf(message: InboundMessage, session: string | null): TrailEntry {
    let entry = entries.get(message.id);
    if (entry === undefined) {
      entry = {
        received: {
          channel: message.channel,
          platform: message.platform,
          chat_type: message.chat.type,
          chat_id: message.chat.id,
          sender_id: message.sender.id,
          sender_name: message.sender.name ?? null,
          text: keptText(message.text, options.storeText)?.slice(0, MAX_TRAIL_TEXT_CHARS) ?? null,
          at: message.received_at,
        },
        session,
        turns: [],
        outcome: null,
      };
      entries.set(message.id, entry);
      // Maps iterate in insertion order: the first key is the oldest message.
      if (entries.size > maxMessages) entries.delete(entries.keys().next().value as string);
    }
    return entry;
  }

  return {
    observer: {
      turnStarted(turn) {
        const run: TrailTurn = {
          id: turn.id,
          pipeline: turn.pipeline,
          attempt: turn.attempt,
          messages: turn.messages.map(({ message }) => message.id),
          started_at: now(),
          ended_at: null,
          result: null,
          duration_ms: null,
          retry_delay_ms: null,
        };
        running.set(turn.id, run);
        for (const queued of turn.messages) {
          const entry = entryOf(queued.message, turn.session);
          if (entry.turns.length < MAX_TURNS_PER_MESSAGE) entry.turns.push(run);
        }
      },
      turnEnded(turn, result, durationMs) {
        const run = running.get(turn.id);
        running.delete(turn.id);
        if (run === undefined) return;
        run.ended_at = now();
        run.result = result;
        run.duration_ms = durationMs;
      },
      // Called before `turnEnded(turn, 'retried')`.
      turnRetried(turn, delayMs) {
        const run = running.get(turn.id);
        if (run !== undefined) run.retry_delay_ms = delayMs;
      },
    },
    recordOutcome(outcome) {
      if (outcome.kind === 'ignored' && !options.recordIgnored) return;
      const entry = entryOf(outcome.message, outcome.session);
      entry.outcome = {
        kind: outcome.kind,
        reason: outcome.reason ?? null,
        rule: outcome.rule ?? null,
        pipeline: outcome.pipeline ?? null,
        error: outcome.error ? `${outcome.error.code}: ${outcome.error.message}` : null,
        replies: keptReplies(outcome.replies, options.storeText, TRAIL_REPLY_LIMITS),
        at: outcome.at,
      };
    },
    get(messageId) {
      return entries.get(messageId) ?? null;
    },
  };
}
