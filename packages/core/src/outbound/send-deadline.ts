import { SwitchboardError } from '../model/errors.js';
import type { InboundMessage, Reply } from '../model/message.js';
import type { ChannelAdapter, ChannelSendOptions } from '../ports/channel-adapter.js';

/** The signal of a send that nothing aborts (`ChannelAdapter.localSend`). */
const NEVER_ABORTED = new AbortController().signal;

/**
 * Sends `replies` through `channel` with a deadline (docs/design.md §7, `channels[].outbound.send_timeout`),
 * editing `options.draft` when a preview showed the answer (§4 "Streaming"). At `timeoutMs` the
 * send's signal aborts with SB_CHANNEL_SEND_TIMEOUT and this rejects with that error at once,
 * whether or not the platform library honours the signal: a send that never settled would hold
 * its chat in the outbox, and its place in the channel's concurrency, for good. A send that
 * settles after the deadline is ignored; whatever it posted stays posted (the delivery is tried
 * again, so a reply may show up twice).
 *
 * A channel whose send stays in the process (`ChannelAdapter.localSend`) is handed a signal that
 * never aborts: its send has no platform call to stop, and node builds each `AbortSignal` slowly
 * (a few µs, a few percent of the HTTP echo path's CPU). The deadline still rejects at its time.
 */
export function sendWithDeadline(
  channel: Pick<ChannelAdapter, 'id' | 'send' | 'localSend'>,
  origin: InboundMessage,
  replies: readonly Reply[],
  timeoutMs: number,
  options?: ChannelSendOptions,
): Promise<void> {
  const deadline = channel.localSend === true ? undefined : new AbortController();
  // One promise settled by the send or by the timer, whichever comes first: this runs for every
  // send, and a race of two promises inside an async function cost three more and as many turns
  // of the microtask queue before the sender heard of it.
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      const error = new SwitchboardError('SB_CHANNEL_SEND_TIMEOUT', {
        message: `channel "${channel.id}" did not finish sending within ${timeoutMs} ms`,
        details: { channel: channel.id, timeout_ms: timeoutMs },
        retryable: true,
      });
      deadline?.abort(error);
      reject(error);
    }, timeoutMs);
    let sending: Promise<void>;
    try {
      sending = channel.send(origin, replies, deadline?.signal ?? NEVER_ABORTED, options);
    } catch (error) {
      clearTimeout(timer);
      reject(error);
      return;
    }
    // Still listening after the deadline: a late rejection is handled, not unhandled.
    // Promise.resolve returns a native promise as it is, and adopts any other thenable.
    Promise.resolve(sending).then(
      () => {
        clearTimeout(timer);
        resolve();
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
