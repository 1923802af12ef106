import { SwitchboardError } from '../model/errors.js';
import type { InboundMessage, Reply } from '../model/message.js';
import type { ChannelAdapter, ChannelSendOptions } from '../ports/channel-adapter.js';

/**
 * Sends `replies` through `channel` with a deadline (docs/design.md §7, `channels[].outbound.send_timeout`),
 * editing `options.draft` when a preview showed the answer (§4 "Streaming"). At `timeoutMs` the
 * send's signal aborts with SB_CHANNEL_SEND_TIMEOUT and this rejects with that error at once,
 * whether or not the platform library honours the signal: a send that never settled would hold
 * its chat in the outbox, and its place in the channel's concurrency, for good. A send that
 * settles after the deadline is ignored; whatever it posted stays posted (the delivery is tried
 * again, so a reply may show up twice).
 */
export async function sendWithDeadline(
  channel: Pick<ChannelAdapter, 'id' | 'send'>,
  origin: InboundMessage,
  replies: readonly Reply[],
  timeoutMs: number,
  options?: ChannelSendOptions,
): Promise<void> {
  const deadline = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new SwitchboardError('SB_CHANNEL_SEND_TIMEOUT', {
        message: `channel "${channel.id}" did not finish sending within ${timeoutMs} ms`,
        details: { channel: channel.id, timeout_ms: timeoutMs },
        retryable: true,
      });
      deadline.abort(error);
      reject(error);
    }, timeoutMs);
  });
  try {
    // The race keeps listening to the send, so its late rejection is handled, not unhandled.
    await Promise.race([channel.send(origin, replies, deadline.signal, options), expired]);
  } finally {
    clearTimeout(timer);
  }
}
