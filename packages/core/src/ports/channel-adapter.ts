import type { Ingress } from '../inbound/ingress.js';
import type { InboundMessage, Reply } from '../model/message.js';
import type { Logger } from './logger.js';
import type { MediaDownload, MediaRef } from './media.js';
import type { QueuedMessage } from '../model/queued-message.js';

export interface ChannelContext {
  /**
   * Where normalized messages go; acknowledge the platform only after `accept` resolves. A
   * message refused or failed there is answered so that the platform redelivers it, or, when the
   * platform never does (Discord's gateway), ended with `drop` so that it has an outcome.
   */
  ingress: Ingress;
  logger: Logger;
  /**
   * This channel's messages accepted before the last stop and recovered from the journal: still
   * queued, or answered with their replies waiting in the outbox (`answered`), their outcomes to
   * come once the controller and the reply sender start (after every channel has).
   */
  recovered?: readonly QueuedMessage[];
}

/** Options of `ChannelAdapter.send`. */
export interface ChannelSendOptions {
  /**
   * The ref `preview` returned for this turn's answer: the platform message showing the answer
   * so far. The send edits it into the first part of the final text and posts the rest, so the
   * answer shows once; without it every part is posted.
   */
  draft?: string;
  /**
   * The turn that answered `origin`, for a channel that reports it with the replies: with a
   * shared reply outbox the sender may be a replica that never heard of the message.
   */
  turn?: string;
  /**
   * True when `replies` are the turn's answer: the outcome recorded once the send succeeds
   * carries them (`Outcome.replies`), so a channel keeping message statuses has them there too.
   * False or absent for a dead-letter reply, which no outcome follows. A replayed dead letter's
   * answer is one, without a `turn`.
   */
  answer?: boolean;
  /**
   * Given to a channel whose send waits for the write that stores its delivery
   * (`ChannelAdapter.localSend`) when that write comes after the send: resolves true once it
   * committed, false when it did not (the delivery is then stored and sent again). What the send
   * shows outside the process (an event stream, another replica) waits for true.
   */
  committed?: Promise<boolean>;
}

export interface ChannelHealth {
  ready: boolean;
  detail?: string;
}

/**
 * A platform connection (docs/design.md §3). Inbound: platform events become `InboundMessage`s handed
 * to `ingress.accept`. Outbound: `send` answers in the chat (and thread) of the message that
 * started the turn, honouring the platform's rate limits.
 *
 * Owns its platform client and connections. Errors from `send` are SwitchboardErrors with
 * SB_CHANNEL_* codes; tokens never appear in them. HTTP routes (webhooks) are mounted by the app
 * through the adapter's own factory options; the core knows no HTTP server.
 *
 * Every send has a deadline (`channels[].outbound.send_timeout`): the caller aborts `signal`
 * when it passes, and does not wait any longer (`sendWithDeadline`), so a hung platform call
 * cannot hold a turn's slot. An adapter passes the signal on to its platform calls so that they
 * stop too; replies already posted stay posted. A `localSend` channel's send has no platform
 * call: it is handed a signal that never aborts, and the deadline only stops waiting for it.
 *
 * Streamed answers (docs/design.md §4 "Streaming"): a channel that implements `preview` shows an
 * answer while the pipeline is still writing it, by posting a message and editing it; the
 * controller calls it at most once per `channels[].outbound.edit_interval`, one call at a time,
 * and hands the ref it returned to `send` as `draft`. Previews are best effort (a failed one is
 * skipped); the final text always goes through `send`.
 *
 * Typing (docs/design.md §3 "Typing"): a channel that implements `typing` shows the bot typing
 * while a turn runs; the controller calls it when the turn starts and every `typingIntervalMs`
 * until the pipeline answered, one call at a time, and aborts the call in flight then. Typing is
 * best effort: a failed call is skipped, and one that would wait for pacing is not made.
 *
 * Media (docs/design.md §2 "Media", ports/media.ts): a channel whose messages carry files
 * implements `openMedia`; the gateway's media route calls it on whichever replica the URL
 * reaches, so like `send` it must work whether or not the channel's inbound connection runs here.
 */
export interface ChannelAdapter {
  readonly id: string;
  readonly type: string;
  /**
   * True when its inbound connection admits one consumer per token (Telegram long polling, a
   * Discord gateway session, Slack Socket Mode): replicas sharing a store run it only where they
   * hold the channel's lease (docs/design.md §5 "Single-owner connections"), so it must start
   * again after a stop. `send` must work whether or not it runs. Absent: false.
   */
  readonly singleConsumer?: boolean;
  /**
   * True when `send` leaves nothing outside this process before its `options.committed` resolves
   * true (the HTTP API channel: it changes the message's status, in memory, and tells its event
   * streams only then, and the outcome's final status carries the answer). The reply sender may then send
   * a delivery first and store it with its end in one write (`ReplyOutbox.reserve`): a crash
   * before that write leaves nothing anyone saw, and the turn runs again. Absent: false, the
   * delivery is stored before `send` is called. Its `send` is handed a signal that never aborts
   * (`sendWithDeadline`).
   */
  readonly localSend?: boolean;
  start(context: ChannelContext): Promise<void>;
  /**
   * Shutdown began, before the engine drains: release at once whatever waits on this channel
   * (a request waiting for its replies) rather than hold the process past the drain. Receiving
   * and `send` go on until `stop`. Optional: most channels have nothing waiting.
   */
  drain?(): void;
  /** Stops receiving; pending sends may still finish. */
  stop(): Promise<void>;
  /**
   * Sends `replies` in answer to `origin` (the first message of the turn). Once `signal` aborts,
   * stops sending and rejects with `signal.reason`. With `options.draft` (a platform message a
   * streamed answer already posted), the first reply edits that message instead of posting.
   */
  send(
    origin: InboundMessage,
    replies: readonly Reply[],
    signal: AbortSignal,
    options?: ChannelSendOptions,
  ): Promise<void>;
  /**
   * Shows `text`, the answer so far, in answer to `origin`: posts it when `draft` is undefined,
   * else edits the message `draft` names (an edit that changes nothing succeeds). Resolves with
   * the ref of the message showing it, which `send` accepts as `draft`. Text beyond one platform
   * message is cut: the final `send` posts it whole. Rejects with `signal.reason` once `signal`
   * aborts. Optional: a channel without it gets each answer whole.
   */
  preview?(
    origin: InboundMessage,
    text: string,
    draft: string | undefined,
    signal: AbortSignal,
  ): Promise<string>;
  /**
   * Shows the bot typing in the chat of `origin`, once: the platform shows it for a few seconds
   * or until the bot posts. Resolves without a call when the channel's pacing has no token free
   * now (a reply must never wait behind a typing signal) or the chat has no typing signal.
   * Rejects with `signal.reason` once `signal` aborts. Optional, with `typingIntervalMs`.
   */
  typing?(origin: InboundMessage, signal: AbortSignal): Promise<void>;
  /** How often `typing` is repeated while a turn runs, ms: a little less than the platform shows it. */
  readonly typingIntervalMs?: number;
  /**
   * Starts downloading the file `media` names (a reference one of this channel's messages
   * carried) and resolves once the platform answered, with the body still streaming. Rejects with
   * SB_MEDIA_UNAVAILABLE when the platform refuses (naming no credential), or with
   * `signal.reason` once `signal` aborts, which also stops the body. Optional: a channel without
   * it gets no `media_url` on its elements.
   */
  openMedia?(media: MediaRef, signal: AbortSignal): Promise<MediaDownload>;
  health(): ChannelHealth;
}
