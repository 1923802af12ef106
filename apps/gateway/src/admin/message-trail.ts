import type { AuditConfig } from '@switchboard/config';
import type { ControllerObserver, InboundMessage, Outcome, Reply, TurnResult } from '@switchboard/core';
import { NO_REPLIES, boundedText, keptReplies } from '../stored-text.js';

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
  /** The rule that routed it, known once a turn of it started; null: the default (or no turn yet). */
  rule: string | null;
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

/** One run of a turn as recorded; `turnView` makes the `TrailTurn` the API answers. */
class TrailRun {
  startedAt: number;
  endedAt: number | null = null;
  result: TurnResult | null = null;
  durationMs: number | null = null;
  retryDelayMs: number | null = null;
  constructor(
    readonly id: string,
    readonly pipeline: string,
    readonly attempt: number,
    /** The ids of its messages; one id, no array, for the usual turn of one message. */
    readonly messages: string | readonly string[],
    startedAt: number,
  ) {
    this.startedAt = startedAt;
  }
}

/**
 * What the trail keeps of a message: one object, filled in place as the message goes on, holding
 * references to strings and objects the message and its outcome already made (never the message
 * itself, whose `raw` event may be large). `entryView` builds the `TrailEntry` when it is read.
 */
class TrailRecord {
  /** Runs past the first, made only for a message that ran more than once. */
  moreRuns: TrailRun[] | null = null;
  outcome: Outcome['kind'] | null = null;
  reason: string | null = null;
  /** The outcome's rule. */
  rule: string | null = null;
  /** The rule its queued message carried into its turns. */
  routedRule: string | null = null;
  pipeline: string | null = null;
  error: { code: string; message: string } | null = null;
  /** Already within `MAX_TRAIL_TEXT_CHARS` each; empty unless `audit.store_text` is `full`. */
  replies: readonly Reply[] = NO_REPLIES;
  outcomeAt = 0;
  firstRun: TrailRun | null = null;
  /** The run started last, kept or not: where its end and retry wait are written. */
  lastRun: TrailRun | null = null;
  readonly channel: string;
  readonly platform: string;
  readonly chatType: string;
  readonly chatId: string;
  readonly senderId: string;
  readonly senderName: string | null;
  readonly receivedAt: number;
  constructor(
    message: InboundMessage,
    readonly session: string | null,
    readonly text: string | null,
  ) {
    this.channel = message.channel;
    this.platform = message.platform;
    this.chatType = message.chat.type;
    this.chatId = message.chat.id;
    this.senderId = message.sender.id;
    this.senderName = message.sender.name ?? null;
    this.receivedAt = message.received_at;
  }

  addRun(run: TrailRun): void {
    this.lastRun = run;
    if (this.firstRun === null) this.firstRun = run;
    else if (this.moreRuns === null) this.moreRuns = [run];
    else if (this.moreRuns.length < MAX_TURNS_PER_MESSAGE - 1) this.moreRuns.push(run);
  }
}

function turnView(run: TrailRun): TrailTurn {
  return {
    id: run.id,
    pipeline: run.pipeline,
    attempt: run.attempt,
    messages: typeof run.messages === 'string' ? [run.messages] : [...run.messages],
    started_at: run.startedAt,
    ended_at: run.endedAt,
    result: run.result,
    duration_ms: run.durationMs,
    retry_delay_ms: run.retryDelayMs,
  };
}

function entryView(record: TrailRecord): TrailEntry {
  const runs = record.firstRun === null ? [] : [record.firstRun, ...(record.moreRuns ?? [])];
  return {
    received: {
      channel: record.channel,
      platform: record.platform,
      chat_type: record.chatType,
      chat_id: record.chatId,
      sender_id: record.senderId,
      sender_name: record.senderName,
      text: record.text,
      at: record.receivedAt,
    },
    session: record.session,
    rule: record.routedRule ?? record.rule,
    turns: runs.map(turnView),
    outcome:
      record.outcome === null
        ? null
        : {
            kind: record.outcome,
            reason: record.reason,
            rule: record.rule,
            pipeline: record.pipeline,
            error: record.error === null ? null : `${record.error.code}: ${record.error.message}`,
            replies: [...record.replies],
            at: record.outcomeAt,
          },
  };
}

/**
 * A bounded, in-memory trail of recent messages: which turns ran them, each attempt's result and
 * retry wait, the other messages of their turn, their outcome. Per replica and lost on restart
 * (the audit log and the status store are what survives); with a shared pool a turn run by
 * another replica is missing here. It follows the audit recorder's rules: text as
 * `audit.store_text` keeps it, replies only when text is kept whole, `ignored` outcomes only under
 * `audit.ignored`; and it cuts every text to `MAX_TRAIL_TEXT_CHARS`.
 *
 * It runs for every message, so recording is O(1) and allocates one record per message and one
 * run per turn, both filled with references; strings and the answer's shape are made when a
 * message is read (`get`). The oldest message is forgotten through a ring of ids, not by
 * iterating the map.
 */
export function createMessageTrail(options: {
  storeText: AuditConfig['storeText'];
  recordIgnored: AuditConfig['recordIgnored'];
  maxMessages?: number;
  now?: () => number;
}): MessageTrail {
  const maxMessages = options.maxMessages ?? DEFAULT_MAX_MESSAGES;
  const now = options.now ?? Date.now;
  const textChars =
    options.storeText === 'none'
      ? 0
      : options.storeText === 'full'
        ? MAX_TRAIL_TEXT_CHARS
        : Math.min(options.storeText, MAX_TRAIL_TEXT_CHARS);
  const records = new Map<string, TrailRecord>();
  // The ids in `records`, oldest at `oldest`: slot i is overwritten by the id added i-th modulo the bound.
  const ids: Array<string | undefined> = new Array(maxMessages).fill(undefined);
  let oldest = 0;

  function recordOf(message: InboundMessage, session: string | null): TrailRecord {
    let record = records.get(message.id);
    if (record === undefined) {
      record = new TrailRecord(
        message,
        session,
        textChars === 0 ? null : boundedText(message.text, textChars),
      );
      const evicted = ids[oldest];
      if (evicted !== undefined) records.delete(evicted);
      ids[oldest] = message.id;
      oldest = oldest + 1 === maxMessages ? 0 : oldest + 1;
      records.set(message.id, record);
    }
    return record;
  }

  /**
   * The running attempt of `turn`, found through its messages (a turn runs once at a time, and
   * each of its messages names it last); null when the trail has forgotten them all.
   */
  function runOf(turn: {
    id: string;
    messages: ReadonlyArray<{ message: { id: string } }>;
  }): TrailRun | null {
    for (const { message } of turn.messages) {
      const run = records.get(message.id)?.lastRun;
      if (run?.id === turn.id) return run;
    }
    return null;
  }

  return {
    observer: {
      turnStarted(turn) {
        const queued = turn.messages;
        const run = new TrailRun(
          turn.id,
          turn.pipeline,
          turn.attempt,
          queued.length === 1 ? (queued[0]?.message.id ?? '') : queued.map(({ message }) => message.id),
          now(),
        );
        for (const { message, rule } of queued) {
          const record = recordOf(message, turn.session);
          record.addRun(run);
          if (rule !== undefined) record.routedRule = rule;
        }
      },
      turnEnded(turn, result, durationMs) {
        const run = runOf(turn);
        // An end is written once: a later end of the same attempt changes nothing.
        if (run === null || run.result !== null) return;
        // From the turn's own duration: one clock read per turn, not two.
        run.endedAt = run.startedAt + durationMs;
        run.result = result;
        run.durationMs = durationMs;
      },
      // Called before `turnEnded(turn, 'retried')`.
      turnRetried(turn, delayMs) {
        const run = runOf(turn);
        if (run !== null && run.result === null) run.retryDelayMs = delayMs;
      },
    },
    recordOutcome(outcome) {
      if (outcome.kind === 'ignored' && !options.recordIgnored) return;
      const record = recordOf(outcome.message, outcome.session);
      record.outcome = outcome.kind;
      record.reason = outcome.reason ?? null;
      record.rule = outcome.rule ?? null;
      record.pipeline = outcome.pipeline ?? null;
      record.error = outcome.error ?? null;
      record.replies = keptReplies(outcome.replies, options.storeText, TRAIL_REPLY_LIMITS);
      record.outcomeAt = outcome.at;
    },
    get(messageId) {
      const record = records.get(messageId);
      return record === undefined ? null : entryView(record);
    },
  };
}
