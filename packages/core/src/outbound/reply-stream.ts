import { within } from '../structures/within.js';
import type { Logger } from '../ports/logger.js';

/** Shows the answer so far: posts it when `draft` is undefined, else edits it; resolves with the ref. */
export type ShowPreview = (text: string, draft: string | undefined, signal: AbortSignal) => Promise<string>;

export interface ReplyStreamOptions {
  /** The channel's `preview`, bound to the turn's origin message. */
  preview: ShowPreview;
  /** Least time between the end of one preview call and the start of the next (`outbound.edit_interval`). */
  editIntervalMs: number;
  /** The longest `finish` waits for the preview in flight and the interval after it (the send deadline). */
  finishTimeoutMs: number;
  logger: Logger;
  /** Clock, ms. Default: `Date.now`. */
  now?: () => number;
}

/**
 * The progressive rendering of one turn's answer (docs/design.md §4 "Streaming"). The pipeline
 * pushes pieces of text; the text so far is posted, then edited, one preview call at a time and
 * none sooner than `editIntervalMs` after the previous one ended, so that a platform sees at most
 * one call per interval whatever the pace of the stream: pieces that arrive meanwhile are
 * coalesced into the next edit, never queued one edit each.
 */
export interface ReplyStream {
  /** The pipeline's `stream` callback: returns at once, never throws; ignored once closed. */
  readonly push: (delta: string) => void;
  /**
   * The pipeline returned: no preview starts any more; waits (within `finishTimeoutMs`) for the one in
   * flight, then until the interval since it has passed, so that the final edit is spaced too.
   * A call still in flight at `finishTimeoutMs` is aborted and waited for until it settles (at most
   * `finishTimeoutMs` more), so that no preview reaches the platform after the final send starts.
   * Resolves with the ref of the posted preview, for the final send to edit; undefined when none
   * was posted (the final send posts the answer). Never rejects.
   */
  finish(): Promise<string | undefined>;
  /** The turn failed or was let go: stops previews and aborts the call in flight. */
  cancel(): void;
}

/**
 * Starts the rendering of a turn's answer. Previews are best effort: a failed edit is skipped
 * (the next piece of text edits again); a failed post ends the previews of the turn, since a post
 * that failed late may still show up, and a second one would show the answer twice.
 */
export function createReplyStream(options: ReplyStreamOptions): ReplyStream {
  const { preview, editIntervalMs, finishTimeoutMs, logger } = options;
  const now = options.now ?? Date.now;
  // Made by the first preview call: most answers are not streamed at all.
  let stop: AbortController | undefined;
  let text = '';
  /** The text the last preview call was made with, whether it succeeded or not. */
  let rendered = '';
  let draft: string | undefined;
  let inFlight: Promise<void> | undefined;
  /** When the last preview call ended, ms. */
  let lastEndedAt = Number.NEGATIVE_INFINITY;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  function schedule(): void {
    if (closed || inFlight !== undefined || timer !== undefined) return;
    // Platforms refuse blank messages; a stream often opens with a newline or a space.
    if (text === rendered || text.trim() === '') return;
    const waitMs = lastEndedAt + editIntervalMs - now();
    if (waitMs > 0) {
      timer = setTimeout(() => {
        timer = undefined;
        schedule();
      }, waitMs);
      return;
    }
    render();
  }

  function render(): void {
    const posting = draft === undefined;
    inFlight = Promise.resolve()
      // Read when the call starts, so that pieces pushed in the same tick go with it.
      .then(() => {
        rendered = text;
        stop ??= new AbortController();
        return preview(text, draft, stop.signal);
      })
      .then(
        (ref) => {
          draft = ref;
        },
        (err: unknown) => {
          if (stop?.signal.aborted) return;
          if (posting) {
            closed = true;
            logger.warn({ err }, 'preview post failed: the answer is sent when complete');
          } else {
            logger.debug({ err }, 'preview edit failed: skipped');
          }
        },
      )
      .finally(() => {
        inFlight = undefined;
        lastEndedAt = now();
        schedule();
      });
  }

  return {
    push(delta) {
      if (closed || delta === '') return;
      text += delta;
      schedule();
    },

    async finish() {
      const deadline = now() + finishTimeoutMs;
      closed = true;
      clearTimeout(timer);
      timer = undefined;
      const call = inFlight;
      if (call !== undefined && (await within(call, finishTimeoutMs)) === 'timeout') {
        logger.warn(
          { timeoutMs: finishTimeoutMs },
          'preview still unanswered when the answer was complete: abandoned',
        );
        stop?.abort();
        // The final send must not overtake it: a post that lands unseen leaves the answer shown
        // twice, an edit that lands after the final one shows the partial text again. Aborted,
        // a call settles at once (the port's contract); one that answered meanwhile gives its ref.
        if ((await within(call, finishTimeoutMs)) === 'timeout') {
          logger.error(
            { timeoutMs: finishTimeoutMs },
            'preview ignored its abort signal: the answer may show twice or end partial',
          );
        }
      }
      if (draft === undefined) return undefined;
      const waitMs = Math.min(lastEndedAt + editIntervalMs, deadline) - now();
      if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
      return draft;
    },

    cancel() {
      closed = true;
      clearTimeout(timer);
      timer = undefined;
      // Made here if no call started yet, so that one about to start gets an aborted signal.
      stop ??= new AbortController();
      stop.abort();
    },
  };
}
