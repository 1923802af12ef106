import { createHash } from 'node:crypto';

/** Options of `createPostedTexts`. */
export interface PostedTextsOptions {
  /** How long a text is remembered, ms: `outbound.max_age`, past which the outbox tries no more. */
  maxAgeMs: number;
  /** The most texts remembered; the oldest are forgotten past it. Default: 10,000. */
  maxEntries?: number;
  /** Clock, ms since the epoch. Default: `Date.now`. */
  now?: () => number;
}

const DEFAULTS = { maxEntries: 10_000, now: Date.now } satisfies Omit<
  Required<PostedTextsOptions>,
  'maxAgeMs'
>;

/** One text of one send: the turn (or message) it answers, its place in the send, its text. */
export interface PostedText {
  answering: string;
  index: number;
  text: string;
}

/** What `createPostedTexts` remembers. */
export interface PostedTexts {
  /** Whether `posted` was posted (and is not forgotten yet). */
  has(posted: PostedText): boolean;
  /** Remembers that `posted` was posted, now. */
  add(posted: PostedText): void;
}

/**
 * The texts this process posted, for a platform that takes no idempotency key (WhatsApp's Cloud
 * API, the Bot Connector): the outbox tries a failed send again whole, and a send tried again
 * after a later text failed skips the ones already delivered. The text is part of the key, so a
 * dead-letter notice for a message is not taken for its answer. In memory only: another replica,
 * or this one after a restart, posts them again; a text whose answer was lost (a timeout) was
 * perhaps posted all the same, and may show twice.
 */
export function createPostedTexts(options: PostedTextsOptions): PostedTexts {
  const maxEntries = options.maxEntries ?? DEFAULTS.maxEntries;
  const now = options.now ?? DEFAULTS.now;
  /** When each was posted, ms; a Map keeps insertion order, so the oldest come first. */
  const postedAt = new Map<string, number>();
  // A digest, not the text: a part may be thousands of characters, and 10,000 are kept.
  const keyOf = ({ answering, index, text }: PostedText) =>
    createHash('sha256')
      .update(JSON.stringify([answering, index, text]))
      .digest('base64url');

  function forgetOld(atMs: number): void {
    for (const [key, at] of postedAt) {
      if (postedAt.size <= maxEntries && atMs - at < options.maxAgeMs) return;
      postedAt.delete(key);
    }
  }

  return {
    has(posted: PostedText): boolean {
      forgetOld(now());
      return postedAt.has(keyOf(posted));
    },
    add(posted: PostedText): void {
      const atMs = now();
      postedAt.set(keyOf(posted), atMs);
      forgetOld(atMs);
    },
  };
}
