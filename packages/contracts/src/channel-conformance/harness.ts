import type {
  ChannelAdapter,
  ChannelLeases,
  EventType,
  InboundMessage,
  LeaseTiming,
  Logger,
} from '@switchboard/core';

/**
 * What a channel declares about itself; the conformance checks a capability excludes are
 * reported as skipped, never run as passing.
 */
export interface ChannelCapabilities {
  /**
   * Inbound requests carry a secret the channel checks (a webhook's secret token or signature,
   * the HTTP API's bearer key): forged and missing ones can be delivered.
   */
  signedInbound: boolean;
  /** The platform sends an event again when it was not acknowledged (with the same key). */
  redelivery: boolean;
  /** Group chats exist, where the bot answers only when addressed. */
  groups: boolean;
  /**
   * `send` calls a platform API the fake serves, which can hang, refuse the token or answer its
   * rate limit. False for a channel whose replies are local writes (the HTTP API's statuses).
   */
  platformSends: boolean;
  /** The adapter implements `preview` (streamed answers) on a platform the fake serves. */
  preview: boolean;
  /** The adapter paces its sends to the platform's limits (`outbound.rate`). */
  pacing: boolean;
  /**
   * `webhook`: every replica takes events: they come in requests to the gateway, or over
   *   connections of which the platform holds several and sends each event to one (Feishu's).
   * `single-owner`: one connection per token (long polling, Socket Mode, a gateway session).
   */
  connection: 'webhook' | 'single-owner';
  /** Characters per platform message: longer replies are split. Absent: never split. */
  splitLimit?: number;
  /**
   * A send that failed retryably after some of its platform calls went through, tried again,
   * delivers those parts no more: by the platform's idempotency key (LINE's retry key, Feishu's
   * uuid) or the channel's memory of what it posted (WhatsApp, Teams). Needs `splitLimit` and a
   * harness whose `failNextSend` honours `after`. False where the outbox posts them again
   * (a known gap).
   */
  resendsSkipDelivered: boolean;
  /**
   * How the platform learns that an event was taken: an answer to its request or an
   * acknowledgement (`ack`), or not at all (`none`: the channel retries a refusal itself and
   * ends with `ingress.drop`).
   */
  acknowledgement: 'ack' | 'none';
  /**
   * The chats of the harness's origins in which `typing` reaches the platform's typing call (the
   * fake serves it): both where every chat has one (Telegram, Discord), `direct` for Slack (only
   * assistant threads show a status, and the harness's direct origins are such threads), none
   * without `typing`. In a chat not listed, `typing` resolves without a platform call.
   */
  typing: readonly ('direct' | 'group')[];
  /**
   * The edits, deletions and reactions the platform reports and the channel turns into
   * `InboundMessage.event` (needs `ChannelHarness.eventOf`); empty for none.
   */
  events: readonly EventType[];
}

/** An event of the platform, as `ChannelHarness.event` describes it. */
export interface EventSpec {
  chat: 'direct' | 'group';
  /** In a group: whether the text mentions the bot. */
  mention?: boolean;
  text: string;
}

/** A platform event built by the harness: delivering it again delivers the same event. */
export interface PlatformEvent {
  /** The platform's key of the event (update_id, message ts…), for messages in failures. */
  readonly key: string;
  readonly spec: EventSpec;
}

/**
 * How an event reaches the channel: `signed` as the platform sends it; `redelivered` as the
 * platform sends it again (its retry markers set); `forged` with a wrong signature or secret;
 * `unsigned` without one; `malformed` signed, but with a body that is not an event;
 * `forged-malformed` a wrong signature on a body that is not even JSON.
 */
export type DeliveryMode =
  | 'signed'
  | 'redelivered'
  | 'forged'
  | 'unsigned'
  | 'malformed'
  | 'forged-malformed';

/** What the platform got back for one delivery. */
export interface DeliveryAnswer {
  /** Taken: answered 2xx, acknowledged, or confirmed; false means the platform will send it again. */
  acknowledged: boolean;
  /** The HTTP status, when the event came in a request. */
  status?: number;
  /** The answer's `Retry-After` header, when the event came in a request and it had one. */
  retryAfter?: string;
}

/** The answer to a delivery made in an HTTP request: acknowledged when 2xx, with its Retry-After. */
export function deliveryAnswerOf(response: { status: number; headers: Headers }): DeliveryAnswer {
  const retryAfter = response.headers.get('retry-after');
  return {
    status: response.status,
    acknowledged: response.status >= 200 && response.status < 300,
    ...(retryAfter === null ? {} : { retryAfter }),
  };
}

/** What the next send call of the platform answers instead of succeeding. */
export type SendFailure =
  | { kind: 'hang' }
  /** The platform's rate limit answer, with `ChannelHarness.rateLimitHintMs` as its hint. */
  | { kind: 'rate_limited' }
  /** The token is refused. */
  | { kind: 'auth' };

/** What the next typing call of the platform answers instead of succeeding. */
export type TypingFailure =
  | { kind: 'hang' }
  /** The platform's rate limit answer, with `ChannelHarness.rateLimitHintMs` as its hint. */
  | { kind: 'rate_limited' }
  /** A 500 of the platform. */
  | { kind: 'server_error' };

/** What `createAdapter` builds against. */
export interface AdapterSetup {
  /** The logger the adapter must log to (it captures every line for the secrets check). */
  logger: Logger;
}

/**
 * One channel against its fake platform server, written by the channel's test. The suite
 * creates it once per group of checks, creates adapters on it, starts them with its own ingress
 * and stops them after each check; `close` ends the fake.
 */
export interface ChannelHarness {
  /** Every configured secret (tokens, signing secrets, keys): none may reach a log or an error. */
  secrets: readonly string[];
  /**
   * The wait the fake's rate-limit answer asks for (`retry_after`, Retry-After), ms: beyond what
   * the adapter waits out itself when it gives the limit back to the outbox, short when the
   * adapter waits every limit out (the check then waits too).
   */
  rateLimitHintMs: number;
  /** `outbound.send_timeout` of the adapters it creates, ms. */
  sendTimeoutMs: number;
  /** `outbound.edit_interval` of the adapters it creates, ms (with `preview`). */
  editIntervalMs: number;
  /**
   * With `pacing`: the per-chat limit the fake enforces and the adapters are configured with
   * (`limit` calls per `perMs`); the fake counts calls past it as violations.
   */
  perChatLimit?: { limit: number; perMs: number };
  /**
   * A new adapter configured against the fake (`api_root`…), not started. A webhook harness
   * mounts its routes on a server of its own, which `deliver` then targets (the latest one).
   */
  createAdapter(setup: AdapterSetup): ChannelAdapter;
  /** A new platform event in a chat of its own. */
  event(spec: EventSpec): PlatformEvent;
  /**
   * Delivers `event` to the running adapter and resolves once the platform has its answer. For
   * a single-owner connection, `acknowledged: false` means the event was fetched or sent again.
   */
  deliver(event: PlatformEvent, mode: DeliveryMode): Promise<DeliveryAnswer>;
  /** A message to answer, in a chat of its own that no other check uses. */
  origin(chat: 'direct' | 'group'): InboundMessage;
  /** The texts the fake posted into `origin`'s chat, in order (edits not included). */
  delivered(origin: InboundMessage): string[];
  /** With `preview`: the arrival times (ms since the epoch) of every post and edit into the chat. */
  previewCalls?(origin: InboundMessage): number[];
  /**
   * The next send call of the platform answers `failure`; with `after` (needed with
   * `resendsSkipDelivered`), that many send calls succeed first.
   */
  failNextSend(failure: SendFailure, options?: { after?: number }): void;
  /**
   * With `typing`: the typing calls the fake received for `origin`'s chat, answered or not (a hung
   * one included).
   */
  typingCalls?(origin: InboundMessage): number;
  /** With `typing`: the next typing call of the platform answers `failure`. */
  failNextTyping?(failure: TypingFailure): void;
  /**
   * With `events`: an edit (to `text`), deletion or reaction of the message `original` carries,
   * in its chat, by its author; `original` must have been delivered first. Delivering it again
   * (`redelivered`) delivers the same event.
   */
  eventOf?(original: PlatformEvent, type: EventType, text: string): PlatformEvent;
  /** With `pacing`: calls the fake refused for exceeding its limits. */
  rateLimitViolations?(): number;
  /** With `connection: 'single-owner'`: the most consumer connections the fake saw open at once. */
  maxConsumers?(): number;
  close(): Promise<void>;
}

/**
 * A channel's conformance setup: its capabilities, known when the suite is declared (so that the
 * checks they exclude are reported skipped), and how to start a harness with its fake.
 */
export interface ChannelHarnessFactory {
  capabilities: ChannelCapabilities;
  start(): Promise<ChannelHarness>;
  /**
   * With `connection: 'single-owner'`: how the gateway puts such adapters behind their leases,
   * channel-kit's `ownChannels` (passed in, as channel-kit's own tests run these suites).
   */
  ownChannels?: OwnChannels;
}

/** The shape of channel-kit's `ownChannels` the single-owner check drives. */
export type OwnChannels = (
  adapters: ReadonlyMap<string, ChannelAdapter>,
  options: { leases: ChannelLeases; replicaId: string; logger: Logger; timing: LeaseTiming },
) => {
  adapters: ReadonlyMap<string, ChannelAdapter>;
  owned: ReadonlyMap<string, { role(): 'active' | 'standby' }>;
};
