import type { InboundMessage } from '../model/message.js';
import { type RateBucket, type RateBuckets, bucketKey } from '../ports/rate-buckets.js';
import { pause } from '../structures/pause.js';

/** One bucket's rate: `limit` calls per `perMs`, at most `burst` of them at once. */
export interface BucketRate {
  limit: number;
  perMs: number;
  burst: number;
}

/** The buckets a channel's calls count against (`channels[].outbound.rate`); `null`: not paced. */
export interface SendRates {
  /** False: no bucket is used (`outbound.rate.enabled: false`). */
  enabled: boolean;
  /** Every call of the bot. */
  perBot: BucketRate | null;
  /** Every call into one chat. */
  perChat: BucketRate | null;
  /** Every call into one group chat, on top of `perChat`. */
  perGroup: BucketRate | null;
}

/** The chat a paced call goes to. */
export interface PacedChat {
  /** The platform's chat id (a Telegram chat, a Slack or Discord channel). */
  id: string;
  /** A group chat: counts against `perGroup` too. */
  group: boolean;
}

/** The chat a reply to `origin` goes to. */
export function pacedChatOf(origin: InboundMessage): PacedChat {
  return { id: origin.chat.id, group: origin.chat.type === 'group' };
}

/**
 * Holds a channel's platform calls back until they fit its rates (docs/design.md §3 "Pacing").
 * Shared by everything that posts into a chat: sends, and edits of a message being streamed.
 */
export interface SendPacer {
  /**
   * Resolves, with the ms it waited, once a call to `chat` fits every bucket and has taken its
   * tokens: call the platform right after. Rejects with `signal.reason` when `signal` (the
   * call's deadline) aborts first; then no token was taken.
   */
  pace(chat: PacedChat, signal: AbortSignal): Promise<number>;
  /**
   * For a call that may be skipped (a typing signal): takes a token of the bot's bucket if it has
   * one now and resolves true, else takes nothing and resolves false; never waits. The chat's and
   * group's buckets, which a reply into that chat needs next, are left alone: the platforms' chat
   * limits count messages, not typing signals.
   */
  tryPace(): Promise<boolean>;
}

export interface SendPacerOptions {
  /** The channel id: buckets are per channel, so two bots never share one. */
  channel: string;
  /** Where the buckets live: memory for one process, Redis for replicas sharing a bot. */
  buckets: RateBuckets;
  rates: SendRates;
  /** Told the ms each paced call waited (0 included), for `switchboard_send_wait_seconds`. */
  onPaced?: (waitedMs: number) => void;
  /** Clock for the waits reported, ms. Default: `Date.now`. */
  now?: () => number;
}

/** A pacer that never waits: pacing switched off (`outbound.rate.enabled: false`). */
export const UNPACED: SendPacer = Object.freeze({ pace: async () => 0, tryPace: async () => true });

/**
 * Paces calls with token buckets: takes a token of the bot's, the chat's and (for a group) the
 * group's bucket together, or waits as long as `buckets` says and tries again. Rates switched
 * off, or all `null`, give `UNPACED`.
 */
export function createSendPacer(options: SendPacerOptions): SendPacer {
  const { channel, buckets, rates } = options;
  const now = options.now ?? Date.now;
  if (!rates.enabled || (rates.perBot === null && rates.perChat === null && rates.perGroup === null))
    return UNPACED;

  const botBucket: RateBucket | null =
    rates.perBot === null ? null : { key: bucketKey(channel, 'bot'), ...rates.perBot };

  function bucketsOf(chat: PacedChat): RateBucket[] {
    const list: RateBucket[] = [];
    if (botBucket !== null) list.push(botBucket);
    if (rates.perChat !== null) list.push({ key: bucketKey(channel, 'chat', chat.id), ...rates.perChat });
    if (chat.group && rates.perGroup !== null)
      list.push({ key: bucketKey(channel, 'group', chat.id), ...rates.perGroup });
    return list;
  }

  return {
    async pace(chat, signal) {
      const list = bucketsOf(chat);
      const startedAt = now();
      for (;;) {
        signal.throwIfAborted();
        if (list.length === 0) break;
        const waitMs = await buckets.take(list);
        if (waitMs === 0) break;
        await pause(waitMs, signal);
      }
      const waitedMs = now() - startedAt;
      options.onPaced?.(waitedMs);
      return waitedMs;
    },

    async tryPace() {
      return botBucket === null || (await buckets.take([botBucket])) === 0;
    },
  };
}
