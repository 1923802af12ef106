import { durationMs, numeric } from '@switchboard/core';
import { z } from 'zod';

/** `channels[].outbound.retry`: the waits between tries of a delivery that failed. */
const OutboundRetrySchema = z
  .strictObject({
    /** The first wait; each later one doubles (with jitter), up to `max_delay`. */
    base_delay: durationMs({ min: '100ms', max: '1h' }).prefault('1s'),
    /** The longest wait, also when the platform asks for longer (`retry_after`). */
    max_delay: durationMs({ min: '100ms', max: '1h' }).prefault('1m'),
  })
  .transform(({ base_delay, max_delay }) => ({ baseDelayMs: base_delay, maxDelayMs: max_delay }));

/**
 * `channels[].outbound`: how a channel sends replies (docs/design.md §2 "Outbox"); every channel
 * type has these keys.
 */
export const outboundFields = {
  /**
   * The longest one try at sending a delivery may take, rate-limit waits included; then the
   * send is aborted and tried again later (docs/design.md §7).
   */
  send_timeout: durationMs()
    .prefault('30s')
    .refine((ms) => ms >= 1_000 && ms <= 600_000, 'must be between 1s and 10m'),
  /**
   * Streamed answers (docs/design.md §4): the least time between two previews of an answer in
   * one chat (the post, each edit and the final edit); pieces arriving meanwhile are coalesced.
   */
  edit_interval: durationMs()
    .prefault('1s')
    .refine((ms) => ms >= 100 && ms <= 60_000, 'must be between 100ms and 1m'),
  /** Chats of this channel sent to at once; one delivery at a time per chat. */
  concurrency: numeric(z.number().int().min(1).max(1000)).prefault(64),
  /**
   * How long a delivery is tried, from when its replies were stored; then it is a dead letter
   * `delivery_failed` whose replay sends the stored replies again.
   */
  max_age: durationMs({ min: '1s', max: '168h' }).prefault('1h'),
  retry: OutboundRetrySchema.prefault({}),
  /**
   * Shows the bot typing in the chat while a turn runs (docs/design.md §3 "Typing"), where the
   * platform has a typing signal (Telegram, Discord, Slack assistant threads).
   */
  typing: z.boolean().default(true),
  /**
   * Whether a reply's url attachment, which the gateway fetches for a platform that takes only
   * uploads (Slack, Discord, Feishu), may lead — directly, by DNS or by a redirect — to a loopback,
   * private or link-local address. Off: the url may come from a user through a pipeline, and
   * the gateway must not fetch its own network (e.g. cloud metadata at 169.254.169.254) for them.
   */
  allow_private_urls: z.boolean().default(false),
};

type OutboundFields = z.output<z.ZodObject<typeof outboundFields>>;

/** The parsed `outbound` keys every channel type has, camelCase with units in the names. */
export function toOutbound({
  send_timeout,
  edit_interval,
  concurrency,
  max_age,
  retry,
  typing,
  allow_private_urls,
}: OutboundFields) {
  return {
    sendTimeoutMs: send_timeout,
    editIntervalMs: edit_interval,
    concurrency,
    maxAgeMs: max_age,
    retry,
    typing,
    allowPrivateUrls: allow_private_urls,
  };
}

/** `channels[].outbound` of a channel that paces nothing itself (the HTTP channel). */
export const OutboundSchema = z.strictObject(outboundFields).transform(toOutbound);
