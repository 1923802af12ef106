import { durationMs, numeric } from '@switchboard/core';
import { z } from 'zod';
import { outboundFields, toOutbound } from './outbound.js';

/**
 * One token bucket of `outbound.rate`: `limit` calls per `per`, at most `burst` of them at once
 * (default: `limit`); `null` switches the bucket off.
 */
const BucketRateSchema = z
  .strictObject({
    limit: numeric(z.number().int().min(1).max(100_000)),
    per: durationMs({ min: '1ms', max: '1h' }),
    burst: numeric(z.number().int().min(1).max(100_000)).optional(),
  })
  .transform(({ limit, per, burst }) => ({ limit, perMs: per, burst: burst ?? limit }));

/** One bucket of `RateDefaults`, as written in the YAML. */
export type BucketRateInput = z.input<typeof BucketRateSchema>;

/** A platform's pacing defaults (docs/channels.md#pacing), in YAML form. */
export interface RateDefaults {
  enabled: boolean;
  per_bot: BucketRateInput | null;
  per_chat: BucketRateInput | null;
  per_group: BucketRateInput | null;
}

/** `channels[].outbound.rate`: the token buckets that pace a chat platform's sends and edits. */
function outboundRateSchema(defaults: RateDefaults) {
  return z
    .strictObject({
      /** Off: calls are never held back, and the platform's 429s are waited out (its `retry_after`). */
      enabled: z.boolean().default(defaults.enabled),
      /** Every call of the bot. */
      per_bot: BucketRateSchema.nullable().prefault(defaults.per_bot),
      /** Every call into one chat (a Slack or Discord channel). */
      per_chat: BucketRateSchema.nullable().prefault(defaults.per_chat),
      /** Every call into one group chat, on top of `per_chat`. */
      per_group: BucketRateSchema.nullable().prefault(defaults.per_group),
    })
    .transform((rate) => ({
      enabled: rate.enabled,
      perBot: rate.per_bot,
      perChat: rate.per_chat,
      perGroup: rate.per_group,
    }));
}

/** `channels[].outbound` of a chat platform: the common keys plus `rate` with the platform's defaults. */
export function pacedOutboundSchema(defaults: RateDefaults) {
  return z
    .strictObject({ ...outboundFields, rate: outboundRateSchema(defaults).prefault({}) })
    .transform(({ rate, ...fields }) => ({ ...toOutbound(fields), rate }));
}
