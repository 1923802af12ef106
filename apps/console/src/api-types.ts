/**
 * The admin API's answers as the console reads them (README "Admin API"; docs/design.md §7).
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
  pipelines: Record<string, { ok: boolean; detail?: string }>;
  replicas?: Array<{ id: string; alive: boolean; heartbeat_expires_at: number; turns_running: number }>;
  channels: Array<{ id: string; type: string; state: string; holder: string | null }>;
}

/** `GET /admin/messages/{id}`: one message's whole path. */
export interface MessagePath {
  message_id: string;
  received: {
    at: number;
    channel: string;
    session: string;
    sender_id: string;
    sender_name: string | null;
    text: string | null;
  } | null;
  routed: { rule: string | null; pipeline: string | null } | null;
  merged_with: string[];
  turns: Array<{ attempt: number; at: number; error: string | null }>;
  replies: Array<{ text?: string }>;
  /** The latest outcome; a replayed dead letter ends again. */
  outcome: AuditItem | null;
  /** Every outcome recorded for it, oldest first. */
  history: AuditItem[];
}

/** `GET /admin/routing`: the rules in order, each with the messages it routed since start. */
export interface Routing {
  default: string;
  default_hits: number;
  rules: Array<{
    name: string;
    pipeline: string;
    channels: string[] | null;
    conditions: string[];
    hits: number;
  }>;
}

/** `POST /admin/route`: what `switchboard route --json` prints for the same message. */
export interface RouteDryRun {
  rule: string | null;
  pipeline: string;
  routed_by_rule: boolean;
  admission: { admitted: boolean; reason?: string };
  trace: Array<{ rule: string; matched: boolean; why: string }>;
}

/** `GET /admin/overview`: what is happening now, and the last 60 minutes. */
export interface Overview {
  /** Messages per minute by outcome, oldest minute first. */
  minutes: Array<{ at: number; outcomes: Partial<Record<Outcome, number>> }>;
  inflight: number;
  sessions: number;
  pending: number;
  limits: { concurrency: number; pipelines: Record<string, number> };
  queues: Array<{ pipeline: string; pending: number; oldest_wait_ms: number | null }>;
  latency: Array<{ pipeline: string; p50_ms: number | null; p95_ms: number | null }>;
  channels: Array<{ id: string; type: string; ok: boolean; state?: string; detail?: string }>;
}
