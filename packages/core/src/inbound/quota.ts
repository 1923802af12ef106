import { z } from 'zod';
import { type InboundMessage, tenantOfMessage } from '../model/message.js';
import { type SessionKey, encodeKeyPart } from '../model/session-key.js';
import { MAX_BUCKETS_PER_TAKE, type RateBucket, type RateBuckets } from '../ports/rate-buckets.js';
import { durationMs } from '../schema/duration.js';
import { numeric } from '../schema/numeric.js';

// Tenants' quotas (docs/design.md §10): token buckets over a tenant's inbound messages, taken
// once per message that would run (after admission and routing, before the enqueue), all of a
// message's quotas at once or none. A message past one ends `dropped` with reason `quota`.

/** What one quota counts: the messages of one sender, of one session, or of the whole tenant. */
export const QUOTA_SCOPES = ['sender', 'session', 'tenant'] as const;
export type QuotaScope = (typeof QUOTA_SCOPES)[number];

/** The most quotas one tenant may have: every one is a bucket of the message's one take. */
export const MAX_QUOTAS_PER_TENANT = MAX_BUCKETS_PER_TAKE;

/**
 * One `quotas[]` entry: `limit` messages per `per`, as a token bucket of `limit` tokens (the
 * burst) that refills evenly over `per`. Parsed into `{ scope, limit, perMs }`.
 */
export const QuotaSchema = z
  .strictObject({
    scope: z.enum(QUOTA_SCOPES),
    /** Messages allowed per `per`, and at once. */
    limit: numeric(z.number().int().min(1).max(1_000_000_000)),
    /** The period: `30s`, `1m`, `1h`, `1d`. Not a timer, so it may pass Node's longest one. */
    per: durationMs({ min: '1s', max: '31d' }),
  })
  .transform(({ scope, limit, per }) => ({ scope, limit, perMs: per }));

export type Quota = z.output<typeof QuotaSchema>;

/** A tenant's `quotas`: at most `MAX_QUOTAS_PER_TENANT`, one per scope and period. */
export const QuotasSchema = z
  .array(QuotaSchema)
  .max(MAX_QUOTAS_PER_TENANT)
  .superRefine((quotas, ctx) => {
    quotas.forEach((quota, index) => {
      const earlier = quotas.findIndex((other) => other.scope === quota.scope && other.perMs === quota.perMs);
      if (earlier !== index)
        ctx.addIssue({
          code: 'custom',
          path: [index],
          message: `a second ${quota.scope} quota over the same period (also [${earlier}]): keep the lower limit`,
        });
    });
  });

/**
 * `quota_reply`: what a chat channel answers a sender past a quota, at most once per that
 * quota's period per sender (per session for `session` and `tenant` quotas). Absent: nothing.
 */
export const QuotaReplySchema = z.string().trim().min(1).max(4000);

/** A tenant's quotas in force. */
export interface TenantQuotas {
  quotas: readonly Quota[];
  /** `quota_reply`; undefined answers nothing. */
  reply?: string;
}

/** What a quota check decided about one message. */
export type QuotaVerdict =
  | {
      allowed: true;
      /** Gives the tokens taken back: the message was then not accepted (refused, a duplicate, a failed store). */
      giveBack(): Promise<void>;
    }
  | {
      allowed: false;
      /** When every quota of the message has a token again, ms (at least 1). */
      retryAfterMs: number;
      /** `quota_reply`, when the sender is to be told now (see `QuotaCheck.take`). */
      reply?: string;
      /** True when `redelivered` said so: the message is a duplicate, and nobody is told. */
      redelivered?: true;
    };

export interface QuotaCheckOptions {
  /**
   * The buckets; they may be the pacing ones' store, since the keys never meet (a quota's starts
   * `quota@`, and no channel id holds an `@`). Shared by replicas on Redis, on Redis' clock.
   */
  buckets: RateBuckets;
  /** The quotas of `tenant` in force now, read per message so that a reload's apply at once. */
  quotasOf(tenant: string): TenantQuotas | undefined;
}

export interface QuotaCheck {
  /**
   * Takes a token from each of the quotas of `message`'s tenant (all or none); `session` is its
   * session key. Refused, `reply` is set when the tenant has a `quota_reply`, `notify` is true
   * (a chat channel), and no reply for one of the refusing quotas went to this sender (or
   * session) in that quota's period yet. `redelivered`, asked only when refused and before any
   * reply is counted: true when the message was already accepted (its delivery key is seen), so
   * a redelivery spends none of the sender's replies.
   */
  take(
    message: InboundMessage,
    session: SessionKey,
    notify: boolean,
    redelivered?: () => Promise<boolean>,
  ): Promise<QuotaVerdict>;
}

/** Whose messages a bucket of `scope` counts: the sender (per channel), the session, nobody apart. */
function subjectOf(scope: QuotaScope, message: InboundMessage, session: SessionKey): string {
  if (scope === 'sender') return `${encodeKeyPart(message.channel)}:${encodeKeyPart(message.sender.id)}`;
  return scope === 'session' ? session : '';
}

/**
 * The bucket of one quota for one subject. The period is in the name, so a reload that changes
 * it starts a bucket of its own; one that changes only the limit keeps the bucket.
 */
function quotaBucketKey(
  kind: 'quota' | 'quota-reply',
  tenant: string,
  quota: Quota,
  subject: string,
): string {
  return `${kind}@${tenant}:${quota.scope}:${quota.perMs}:${subject}`;
}

const NOTHING_TAKEN: QuotaVerdict = { allowed: true, giveBack: async () => {} };

/** The quota check over `options.buckets`. */
export function createQuotaCheck(options: QuotaCheckOptions): QuotaCheck {
  const { buckets } = options;
  return {
    async take(message, session, notify, redelivered) {
      const tenant = tenantOfMessage(message);
      const own = options.quotasOf(tenant);
      if (own === undefined || own.quotas.length === 0) return NOTHING_TAKEN;
      const taken: RateBucket[] = own.quotas.map((quota) => ({
        key: quotaBucketKey('quota', tenant, quota, subjectOf(quota.scope, message, session)),
        limit: quota.limit,
        perMs: quota.perMs,
        burst: quota.limit,
      }));
      const attempt = await buckets.attempt(taken);
      if (attempt.waitMs === 0) return { allowed: true, giveBack: () => buckets.giveBack(taken) };
      const refused = { allowed: false as const, retryAfterMs: attempt.waitMs };
      if (redelivered !== undefined && (await redelivered())) return { ...refused, redelivered: true };
      if (!notify || own.reply === undefined) return refused;
      // One reply per refusing quota's period: a `tenant` quota tells each session once.
      let told = false;
      for (const index of attempt.short) {
        const quota = own.quotas[index] as Quota;
        const subject = subjectOf(quota.scope === 'tenant' ? 'session' : quota.scope, message, session);
        const notice = {
          key: quotaBucketKey('quota-reply', tenant, quota, subject),
          limit: 1,
          perMs: quota.perMs,
          burst: 1,
        };
        if ((await buckets.take([notice])) === 0) told = true;
      }
      return told ? { ...refused, reply: own.reply } : refused;
    },
  };
}
