/**
 * The admin API's answers as the console reads them (docs/operations.md#admin-api; docs/design.md §7).
 * Only the fields the pages show are named.
 */
export const OUTCOMES = [
  'completed',
  'discarded',
  'ignored',
  'dropped',
  'dead_lettered',
  'duplicate',
] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** One audit record: a message's outcome (`GET /admin/audit`, `/admin/messages`). */
export interface AuditItem {
  id: string;
  /** Milliseconds since the epoch. */
  at: number;
  outcome: Outcome;
  reason: string | null;
  rule: string | null;
  channel: string;
  /** The tenant whose channel received the message (`default` for the top-level channels). */
  tenant: string;
  platform: string;
  session: string;
  chat_type: string;
  chat_id: string;
  sender_id: string;
  sender_name: string | null;
  pipeline: string | null;
  message_id: string;
  text: string | null;
  error: string | null;
  replayed_at: number | null;
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/** `GET /admin/dead-letters`. */
export interface DeadLetter extends AuditItem {
  replayable: boolean;
}

/** `GET /admin/queues`. */
export interface Queues {
  pending: number;
  inflight: number;
  sessions: number;
  inflightByPipeline: Record<string, number>;
  pendingByPipeline: Record<string, number>;
  /** 0 when none waits. */
  oldestWaitMsByPipeline: Record<string, number>;
  pipelines: Record<string, { ok: boolean; detail?: string }>;
  replicas?: Array<{ id: string; alive: boolean; heartbeat_expires_at: number; turns_running: number }>;
  channels: Array<{ id: string; type: string; state: string; holder: string | null }>;
}

/** `GET /admin/sessions`: the longest-waiting ready sessions and every running turn. */
export interface Sessions {
  waiting: Array<{ session: string; pipeline: string; pending: number; oldest_wait_ms: number }>;
  running: Array<{
    turn_id: string;
    session: string;
    pipeline: string;
    messages: number;
    age_ms: number;
    /** Null unless replicas share the pool. */
    replica: string | null;
    pending: number;
  }>;
}

/** `GET /admin/messages/{id}`: one message's whole path. */
export interface MessagePath {
  id: string;
  session: string | null;
  received: {
    channel: string;
    platform: string;
    chat_type: string;
    chat_id: string;
    sender_id: string;
    sender_name: string | null;
    text: string | null;
    at: number | null;
  } | null;
  routed: { rule: string | null; by_default: boolean; pipeline: string | null } | null;
  merged_with: string[];
  turns: Array<{
    id: string;
    pipeline: string;
    attempt: number;
    messages: string[];
    started_at: number;
    ended_at: number | null;
    result: string | null;
    duration_ms: number | null;
    retry_delay_ms: number | null;
  }>;
  replies: Array<{ text?: string; attachments?: Array<{ type: string; name?: string }> }>;
  /** The latest outcome; a replayed dead letter ends again. */
  outcome: { status: string; reason: string | null; error: string | null; at: number } | null;
  /** Its audit records, newest first. */
  audit: AuditItem[];
}

/** One routing rule as configured: one condition inline, or `all` of several. */
export interface Condition {
  type: string;
  operator: string;
  value: string;
}

/** `GET /admin/routing`: the rules in order, each with the messages it routed since start. */
export interface Routing {
  rules: Array<
    Partial<Condition> & {
      name: string;
      pipeline: string;
      channels?: string[];
      all?: Condition[];
      hits: number;
    }
  >;
  default: { pipeline: string; hits: number };
}

/** `POST /admin/route`: what `switchboard route --json` prints for the same message. */
export interface RouteDryRun {
  rule: string | null;
  pipeline: string;
  routed_by_rule: boolean;
  admission: { admitted: boolean; reason?: string };
  /** `pipeline <id>`, `discarded (audited)` or `ignored (<reason>)`. */
  result: string;
  trace: Array<{ rule: string; matched: boolean; why: string }>;
}

/** `POST /admin/dead-letters/replay` and `/purge`: each id's own result. */
export interface SelectionResults {
  results: Array<
    { id: string; ok: true } | { id: string; ok: false; error: { code: string; message: string } }
  >;
}

/** `GET /admin/overview`: what is happening now, and the last 60 minutes. */
export interface Overview {
  at: number;
  /** Messages per minute by outcome, oldest minute first. */
  messages_per_minute: Array<{ at: number; counts: Partial<Record<Outcome, number>> }>;
  last_hour: Partial<Record<Outcome, number>>;
  load: {
    inflight_turns: number;
    /** Null for one tenant's overview: the pool counts sessions gateway-wide only. */
    active_sessions: number | null;
    pending: number;
    limits: { concurrency_pipeline: number; concurrency_session: number; max_pending: number };
  };
  pipelines: Record<
    string,
    {
      inflight: number;
      p50_ms: number | null;
      p95_ms: number | null;
      pending: number;
      /** 0 when none waits. */
      oldest_wait_ms: number;
    }
  >;
  channels: Array<{ id: string; ready: boolean; state?: string; detail?: string }>;
}

/** A session an operator took over (`GET /admin/handoffs`, and the session routes). */
export interface HandoffView {
  session: string;
  reason: string;
  /** Who began it: `operator:<label>`, `rule:<name>`, `pipeline:<id>`. */
  by: string;
  /** Milliseconds since the epoch. */
  started_at: number;
  /** The last operator action (the start, a reply). */
  active_at: number;
  pipeline: string | null;
  channel: string | null;
  chat_id: string | null;
  sender: { id: string; name: string | null } | null;
  /** User messages held so far. */
  held: number;
  /** User messages held since the last operator reply. */
  unread: number;
  /** When the oldest unread message was held; null when none is unread. */
  waiting_since: number | null;
  last_text: string | null;
}

/** One line of a handoff's transcript: a user message held, or an operator's reply. */
export interface EntryView {
  /** 1, 2, 3… in the order the entries were written. */
  seq: number;
  at: number;
  from: 'user' | 'operator';
  id: string;
  name: string | null;
  text: string;
}

/** `GET /admin/sessions/{key}`: a session's handoff, its transcript and the bot's recent history. */
export interface SessionView {
  session: string;
  handoff: HandoffView | null;
  /** The current handoff's entries, oldest first. */
  transcript: EntryView[];
  /** Empty when the bot keeps no history. */
  history: Array<{ role: 'user' | 'assistant'; content: string }>;
}

/** `DELETE /admin/sessions/{key}/handoff`. */
export interface HandBack {
  resumed: 'bot' | 'skip';
  held: number;
  /** The merged message the bot runs (`resume: bot` with messages held); null otherwise. */
  message_id: string | null;
}
