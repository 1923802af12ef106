/**
 * The Redis keys of the reply outbox (lua/reply-outbox/includes/preamble.lua has what each holds). All
 * start with the deployment's hash tag, `{<prefix>}:reply-outbox:`, so they share one Redis
 * Cluster slot with the pool. Scripts declare one channel's fixed keys; the per-chat and
 * per-delivery keys are built inside them from the prefix, as the pool's are.
 */
export interface ReplyOutboxKeys {
  /** `{<prefix>}:reply-outbox:` — the scripts build `chat:<channel>:<chat>` and `d:<id>` from it. */
  prefix: string;
  /** Deliveries stored per channel (a HASH): `pending()` reads it. */
  counts: string;
  /** The pub/sub channel on which scripts announce a channel that may have a claimable head. */
  dueChannel: string;
  /** KEYS of every script for `channel`, in the order lua/reply-outbox/includes/preamble.lua expects. */
  keysOf(channel: string): string[];
}

export function replyOutboxKeysOf(prefix: string): ReplyOutboxKeys {
  const base = `{${prefix}}:reply-outbox:`;
  const counts = `${base}counts`;
  return {
    prefix: base,
    counts,
    dueChannel: `${base}due`,
    keysOf: (channel) => [
      counts,
      `${base}seq`,
      `${base}order:${channel}`,
      `${base}waiting:${channel}`,
      `${base}ready:${channel}`,
      `${base}leases:${channel}`,
    ],
  };
}
