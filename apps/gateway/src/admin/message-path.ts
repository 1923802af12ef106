import {
  type AuditLog,
  type AuditRecord,
  DISCARD,
  type MessageStatusStore,
  type Reply,
  SwitchboardError,
} from '@switchboard/core';
import type { AuditConfig } from '@switchboard/config';
import { auditView } from './audit-view.js';
import { type MessageTrail, TRAIL_REPLY_LIMITS, type TrailEntry, type TrailTurn } from './message-trail.js';
import { keptReplies } from '../stored-text.js';

/** Audit records read per message: a message has one outcome, a replayed dead letter a few. */
const MAX_AUDIT_RECORDS = 20;

/** Everything known of one message's way through the gateway (`GET /admin/messages/{id}`). */
export interface MessagePath {
  id: string;
  /**
   * The tenant it is (docs/design.md §10): the one its audit records and the channels of its
   * trail and status all name; null when they disagree or none tells.
   */
  tenant: string | null;
  /** Its session key (to open or take over), from this replica's trail or its audit records. */
  session: string | null;
  /** `at`: when the channel received it; null when only the audit log knows the message. */
  received: (Omit<TrailEntry['received'], 'at'> & { at: number | null }) | null;
  routed: { rule: string | null; by_default: boolean; pipeline: string | null } | null;
  /** The other messages of its turn(s): a merged burst runs as one turn. */
  merged_with: string[];
  turns: TrailTurn[];
  replies: readonly Reply[];
  outcome: { status: string; reason: string | null; error: string | null; at: number } | null;
  /** Its audit records (a dead letter, its replay's outcome…), newest first, without payloads. */
  audit: Array<Omit<AuditRecord, 'payload'>>;
  /** Which sources knew it: the audit log and the status store survive a restart, the trail does not. */
  sources: { audit: boolean; status: boolean; trail: boolean };
}

/**
 * Puts a message's path together from the audit log (outcomes other than completed), the status
 * store (messages of HTTP channels) and this replica's in-memory trail (turns, attempts, merges).
 * Throws SB_HTTP_NOT_FOUND when none of them knows the id.
 */
/**
 * Whose message the path tells of: the tenant every source names — its audit records' stamps,
 * the tenant of the channel its trail and status name — or null when they disagree or none says
 * (then only a global admin token reads it). Another tenant's operator reply given this message's
 * id must not open the message to it.
 */
function tenantOfPath(
  records: readonly { tenant: string }[],
  channels: readonly (string | undefined)[],
  tenantOfChannel: ((channelId: string) => string) | undefined,
): string | null {
  const named = new Set(records.map((record) => record.tenant));
  for (const channel of channels) {
    if (channel !== undefined && tenantOfChannel !== undefined) named.add(tenantOfChannel(channel));
  }
  return named.size === 1 ? ([...named][0] as string) : null;
}

export async function messagePath(
  id: string,
  sources: {
    auditLog: AuditLog;
    statuses: MessageStatusStore;
    trail: MessageTrail;
    /** `audit.store_text`: the status store keeps an HTTP message's replies whatever it says. */
    storeText: AuditConfig['storeText'];
    /** The tenant of a channel, for a message no audit record names the tenant of. */
    tenantOfChannel?: (channelId: string) => string;
  },
): Promise<MessagePath> {
  const [page, status] = await Promise.all([
    sources.auditLog.query({ message: id, limit: MAX_AUDIT_RECORDS }),
    sources.statuses.get(id),
  ]);
  const trail = sources.trail.get(id);
  const newest = page.items[0];
  if (newest === undefined && status === null && trail === null) {
    throw new SwitchboardError('SB_HTTP_NOT_FOUND', {
      message: `no message ${id} in the audit log, the status store or this replica's recent trail`,
      details: { id },
    });
  }
  const turns = trail?.turns ?? [];
  // The sources are written at different moments (a replay's outcome on another replica reaches
  // the status store, not this trail): the latest one tells where the message stands now.
  const outcome = latest(
    [
      trail?.outcome
        ? {
            status: trail.outcome.kind,
            reason: trail.outcome.reason,
            error: trail.outcome.error,
            at: trail.outcome.at,
          }
        : null,
      newest ? { status: newest.outcome, reason: newest.reason, error: newest.error, at: newest.at } : null,
    ],
    // A status newer than a dead letter, of another kind, is its replay's end.
    status ? { status: status.status, reason: null, error: status.error, at: status.updated_at } : null,
  );
  // The trail knows the rule from the turn's start, before any outcome names it.
  const rule = trail?.outcome?.rule ?? trail?.rule ?? newest?.rule ?? status?.rule ?? null;
  const discarded = outcome?.status === 'discarded';
  // A discarded message's outcome names no pipeline: the rule sent it to the discard target.
  const pipeline =
    trail?.outcome?.pipeline ??
    newest?.pipeline ??
    status?.pipeline ??
    turns.at(-1)?.pipeline ??
    (discarded ? DISCARD : null);
  const received =
    trail?.received ??
    (newest === undefined
      ? null
      : {
          channel: newest.channel,
          platform: newest.platform,
          chat_type: newest.chat_type,
          chat_id: newest.chat_id,
          sender_id: newest.sender_id,
          sender_name: newest.sender_name,
          text: newest.text,
          at: null,
        });
  const mergedWith = new Set(turns.flatMap((turn) => turn.messages));
  mergedWith.delete(id);
  return {
    id,
    tenant: tenantOfPath(page.items, [trail?.received.channel, status?.channel], sources.tenantOfChannel),
    session: trail?.session ?? newest?.session ?? null,
    received,
    routed: rule === null && pipeline === null ? null : { rule, by_default: rule === null, pipeline },
    merged_with: [...mergedWith],
    turns,
    replies: trail?.outcome?.replies.length
      ? trail.outcome.replies
      : keptReplies(status?.replies, sources.storeText, TRAIL_REPLY_LIMITS),
    outcome,
    audit: page.items.map(auditView),
    sources: { audit: newest !== undefined, status: status !== null, trail: trail !== null },
  };
}

/**
 * The newest of the known outcomes (the trail's, the audit log's), then the status when it is
 * newer and of another kind: a status of the same kind is the same end told later (a status is
 * stamped when it is written), and the outcome it repeats names the reason.
 */
function latest(
  outcomes: Array<MessagePath['outcome']>,
  status: MessagePath['outcome'],
): MessagePath['outcome'] {
  let found: MessagePath['outcome'] = null;
  for (const outcome of outcomes) {
    if (outcome !== null && (found === null || outcome.at > found.at)) found = outcome;
  }
  if (status === null) return found;
  if (found !== null && (status.status === found.status || status.at <= found.at)) return found;
  return status;
}
