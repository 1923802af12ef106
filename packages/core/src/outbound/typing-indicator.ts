import type { Logger } from '../ports/logger.js';

/** One typing signal: the channel's `typing`, bound to the turn's origin message. */
export type SendTyping = (signal: AbortSignal) => Promise<void>;

export interface TypingIndicatorOptions {
  send: SendTyping;
  /** Time between the starts of two signals (`ChannelAdapter.typingIntervalMs`), ms. */
  intervalMs: number;
  logger: Logger;
}

/** The typing shown while one turn runs (docs/design.md §3 "Typing"). */
export interface TypingIndicator {
  /** The pipeline answered or failed: no signal starts any more, and the one in flight is aborted. */
  stop(): void;
}

/**
 * Sends a typing signal at once and then every `intervalMs` until `stop`, one at a time: a
 * signal still in flight when the next is due makes that one skipped, not queued. A failed
 * signal is logged at debug and the next one tried as usual; nothing is retried and nothing
 * waits for a signal, so typing can never hold a turn or its reply back.
 */
export function startTyping(options: TypingIndicatorOptions): TypingIndicator {
  const { send, intervalMs, logger } = options;
  const stopped = new AbortController();
  let inFlight = false;
  let timer: NodeJS.Timeout | undefined;

  function beat(): void {
    if (stopped.signal.aborted) return;
    timer = setTimeout(beat, intervalMs);
    // A turn's typing never keeps the process alive on its own.
    timer.unref();
    if (inFlight) return;
    inFlight = true;
    send(stopped.signal).then(
      () => {
        inFlight = false;
      },
      (err: unknown) => {
        inFlight = false;
        if (!stopped.signal.aborted) logger.debug({ err }, 'typing signal failed');
      },
    );
  }

  beat();
  return {
    stop() {
      clearTimeout(timer);
      stopped.abort(new Error('the turn no longer types'));
    },
  };
}
