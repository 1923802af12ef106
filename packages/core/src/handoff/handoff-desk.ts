import { HANDOFF } from '../inbound/router.js';
import { SwitchboardError } from '../model/errors.js';
import { type Attachment, type InboundMessage, attachmentSummaryOf, newMessageId } from '../model/message.js';
import { type OutcomeSink, recordOverflowed } from '../model/outcome.js';
import { type SessionKey, sessionAddressOf } from '../model/session-key.js';
import type { Handoff, HandoffEntry, HandoffStart, HandoffStore } from '../ports/handoff-store.js';
import { type Logger, silentLogger } from '../ports/logger.js';
import type { QueryPool, Turn } from '../ports/query-pool.js';
import type { Delivery, ReplyOutbox } from '../ports/reply-outbox.js';
import type { HandoffResume, HandoffSettings } from './handoff-settings.js';
import { resumeMessageOf } from './resume-message.js';

/** What a held turn becomes: `run` when its session is not in handoff. */
export type TurnHold = 'run' | 'held' | 'full';

/** What ending a handoff did. */
export interface HandoffEnd {
  handoff: Handoff;
  resumed: HandoffResume;
  /** User messages held during the handoff. */
  held: number;
  /** The merged message queued for the bot (`resume: bot` with messages held), else null. */
  messageId: string | null;
}

/** Hooks for metrics; every method is optional and must not throw. */
export interface HandoffObserver {
  /** An operator replied to messages that waited `waitedMs` (the oldest unread one). */
  operatorResponded?(waitedMs: number): void;
}

/**
 * An operator's reply (`POST /admin/sessions/{key}/replies`): a text, files, or both; `id`,
 * picked by the caller, makes a repeated request send it once.
 */
export interface OperatorReply {
  operator: string;
  text?: string;
  attachments?: readonly Attachment[];
  id?: string;
}

export interface HandoffDeskOptions {
  store: HandoffStore;
  pool: QueryPool;
  outbox: ReplyOutbox;
  outcomes: OutcomeSink;
  /** `handoff:` of the configuration in force, read at each use so that a reload takes effect. */
  settings: () => HandoffSettings;
  /** Whether a pipeline is configured now: the resumed turn runs on the handoff's when it is. */
  hasPipeline(id: string): boolean;
  /**
   * The pipeline the resumed turn runs on when the handoff names none (begun by a rule) or its
   * pipeline is gone: the routing in force's; null when there is no pipeline to take it.
   */
  reroute(message: InboundMessage): { pipeline: string; rule?: string } | null;
  observer?: HandoffObserver;
  logger?: Logger;
  now?: () => number;
}

/**
 * The operator's side of a conversation (docs/design.md §2 "Handoff", after Chatwoot's agent
 * bots and Botpress' human in the loop): begins handoffs, holds the turns of sessions in handoff
 * instead of running them, sends operators' replies through the outbox, and ends handoffs —
 * handing what was held to the bot as one turn, or leaving it handled.
 */
export interface HandoffDesk {
  /**
   * Called by the controller before a claimed turn runs: `held` when its session is in handoff
   * (the messages are in the transcript, the caller ends them `handed_off`), `full` when the
   * transcript cannot take them, `run` otherwise. A turn routed to `__handoff__` begins the
   * handoff first; the turn resuming one runs whatever happens.
   */
  holdTurn(turn: Turn): Promise<TurnHold>;
  begin(
    session: SessionKey,
    start: Omit<HandoffStart, 'at'>,
  ): Promise<{ handoff: Handoff; created: boolean }>;
  /**
   * Sends an operator's reply to the session's chat and writes it to the transcript; `id`, when
   * the caller picked it, makes a repeated request write and send it once. Throws
   * SB_HANDOFF_NOT_FOUND when the session is not in handoff, SB_HANDOFF_FULL past `maxEntries`.
   */
  reply(session: SessionKey, reply: OperatorReply): Promise<{ id: string; deliveryId: string }>;
  /**
   * Ends the handoff (`startedAt`, `activeAt`: only the one that began then and was last acted
   * on then); null when there is none. With `resume: bot` the held messages are then queued for
   * the bot as one message (`resumed: skip` when none was held); an operator asking for it when no
   * pipeline would take them gets SB_HANDOFF_NO_PIPELINE and the handoff goes on. A process dying
   * between the end and the enqueue loses that turn: its messages stay recorded `handed_off`.
   */
  end(
    session: SessionKey,
    options: { resume: HandoffResume; startedAt?: number; activeAt?: number; why?: 'operator' | 'idle' },
  ): Promise<HandoffEnd | null>;
  /** Ends the handoffs idle past `idleTimeoutMs`; returns how many it ended. */
  endIdle(): Promise<number>;
}

/**
 * How long the key of a resumed turn (and of an operator's reply) is remembered: longer than the
 * longest `handoff.idle_timeout` (7 days), so that ending one handoff again never queues its
 * messages twice.
 */
const RESUME_KEY_TTL_MS = 8 * 24 * 3_600_000;
/** Begins of a `__handoff__` turn's handoff before it is tried again later. */
const BEGIN_TRIES = 3;
/** Handoffs the idle sweep ends per pass. */
const IDLE_BATCH = 100;

export function createHandoffDesk(options: HandoffDeskOptions): HandoffDesk {
  const { store, pool, outbox, outcomes, observer } = options;
  const now = options.now ?? Date.now;
  const logger = (options.logger ?? silentLogger).child({ component: 'handoff' });

  async function begin(session: SessionKey, start: Omit<HandoffStart, 'at'>) {
    const begun = await store.begin(session, { ...start, at: now() });
    if (begun.created) logger.info({ session, by: start.by, reason: start.reason }, 'handoff began');
    return begun;
  }

  /**
   * The pipeline the resumed turn runs on: the handoff's while configured, else where the routing
   * sends the merged text — which only the transcript holds, so it is read only then.
   */
  async function resumeTargetOf(handoff: Handoff): Promise<{ pipeline: string; rule?: string } | null> {
    if (handoff.pipeline !== null && options.hasPipeline(handoff.pipeline))
      return { pipeline: handoff.pipeline };
    const transcript = await store.transcript(handoff.session, 0, handoff.lastSeq);
    const preview = resumeMessageOf(handoff, transcript, now());
    return preview === null ? null : options.reroute(preview);
  }

  /**
   * Queues the merged message for the bot on `target`; null when no user message was held. The
   * handoff has ended already, so refusing it would lose the turn: it is queued as a platform's
   * last delivery is (`last`), which a durable pool keeps past its bounds and while draining.
   */
  async function queueResume(
    handoff: Handoff,
    session: SessionKey,
    transcript: readonly HandoffEntry[],
    target: { pipeline: string; rule?: string },
  ): Promise<string | null> {
    const at = now();
    const message = resumeMessageOf(handoff, transcript, at);
    if (message === null) return null;
    const result = await pool.enqueue(
      {
        message,
        session,
        pipeline: target.pipeline,
        routedByRule: target.rule !== undefined,
        ...(target.rule === undefined ? {} : { rule: target.rule }),
        attempt: 0,
        acceptedAt: at,
      },
      { key: `handoff:${session}:${handoff.startedAt}`, ttlMs: RESUME_KEY_TTL_MS },
      { last: true },
    );
    if (!result.accepted) {
      if (result.reason !== 'duplicate')
        logger.error({ session, reason: result.reason }, 'the held messages could not be queued for the bot');
      return null;
    }
    recordOverflowed(outcomes, result.overflowed, now());
    return message.id;
  }

  async function end(
    session: SessionKey,
    {
      resume,
      startedAt,
      activeAt,
      why = 'operator',
    }: { resume: HandoffResume; startedAt?: number; activeAt?: number; why?: 'operator' | 'idle' },
  ): Promise<HandoffEnd | null> {
    const found = await store.get(session);
    if (found === null) return null;
    if (startedAt !== undefined && found.startedAt !== startedAt) return null;
    if (activeAt !== undefined && found.activeAt !== activeAt) return null;
    // Where the bot would answer, decided before anything changes: with no pipeline to take the
    // turn, an operator is told so and the handoff goes on; the idle sweep leaves them handled.
    let target: { pipeline: string; rule?: string } | null = null;
    if (resume === 'bot' && found.held > 0) {
      target = await resumeTargetOf(found);
      if (target === null && why === 'operator') {
        throw new SwitchboardError('SB_HANDOFF_NO_PIPELINE', {
          message: `no pipeline would answer the held messages of ${session} (the routing sends them back to __handoff__): hand it back with resume: skip, or route them to a pipeline`,
        });
      }
    }
    // Taken whole in one step: whoever ends it (an operator, the idle sweep of any replica) is
    // the only one to queue its messages, and one answered or begun since is left alone.
    const ended = await store.end(session, {
      startedAt: found.startedAt,
      ...(activeAt === undefined ? {} : { activeAt }),
    });
    if (ended === null) return null;
    const messageId =
      target === null ? null : await queueResume(ended.handoff, session, ended.transcript, target);
    const result: HandoffEnd = {
      handoff: ended.handoff,
      resumed: messageId === null ? 'skip' : resume,
      held: ended.handoff.held,
      messageId,
    };
    logger.info({ session, resume: result.resumed, held: result.held, why }, 'handoff ended');
    return result;
  }

  return {
    async holdTurn(turn) {
      // The turn a handoff ended with runs even if another handoff began meanwhile: the operator
      // who ended the first asked for the bot.
      if (turn.messages.some((queued) => queued.message.handoff !== undefined)) return 'run';
      const { maxEntries } = options.settings();
      const messages = turn.messages.map((queued) => queued.message);
      if (turn.pipeline === HANDOFF) {
        const first = turn.messages[0];
        const rule = first?.rule;
        // Begun again should it end between the begin and the hold: this turn has no pipeline to
        // run on. Ended that often meanwhile, it is tried again later, with its backoff.
        for (let tries = 0; tries < BEGIN_TRIES; tries += 1) {
          await begin(turn.session, {
            tenant: first?.message.tenant,
            reason: rule === undefined ? 'routing default' : `rule ${rule}`,
            by: rule === undefined ? 'routing:default' : `rule:${rule}`,
            ...(first === undefined ? {} : { origin: first.message }),
          });
          const held = await store.hold(turn.session, messages, { at: now(), maxEntries });
          if (held !== 'not_in_handoff') return held;
        }
        throw new SwitchboardError('SB_STORE_UNAVAILABLE', {
          retryable: true,
          message: `the handoff of ${turn.session} ended ${BEGIN_TRIES} times as it began`,
        });
      }
      const held = await store.hold(turn.session, messages, {
        at: now(),
        pipeline: turn.pipeline,
        maxEntries,
      });
      return held === 'not_in_handoff' ? 'run' : held;
    },

    begin,

    async reply(session, { operator, text, attachments, id = newMessageId() }) {
      const at = now();
      const files = attachments === undefined || attachments.length === 0 ? undefined : attachments;
      const replied = await store.reply(
        session,
        {
          id,
          operator,
          text: text ?? '',
          ...(files === undefined ? {} : { attachments: files.map(attachmentSummaryOf) }),
          at,
        },
        { maxEntries: options.settings().maxEntries },
      );
      if (replied === 'not_in_handoff') throw new SwitchboardError('SB_HANDOFF_NOT_FOUND');
      if (replied === 'full') throw new SwitchboardError('SB_HANDOFF_FULL');
      const { before } = replied;
      const origin = before.origin ?? originOf(session, at);
      // The reply is a message of its own, the operator's, whose outcome its delivery records:
      // `handed_off/operator_reply` once sent, a replayable `delivery_failed` dead letter if not.
      const sent: InboundMessage = {
        id,
        platform: origin.platform,
        channel: origin.channel,
        // The session's tenant: the operator's message is recorded and scoped as the user's were.
        ...(origin.tenant === undefined ? {} : { tenant: origin.tenant }),
        chat: origin.chat,
        sender: { id: `operator:${operator}`, name: operator, is_bot: false },
        elements: text === undefined ? [] : [{ type: 'text', text }],
        text: text ?? '',
        mentions_bot: false,
        platform_message_id: id,
        received_at: at,
      };
      const delivery: Delivery = {
        // Per session: a caller's id reused in another session is another reply.
        id: `operator:${session}:${id}`,
        channel: origin.channel,
        chat: session,
        origin,
        // `__handoff__`: the operator's message, not the bot's (a replay of it re-sends, never asks).
        messages: [{ message: sent, session, pipeline: HANDOFF, attempt: 0 }],
        turnId: null,
        replies: [
          {
            ...(text === undefined ? {} : { text }),
            ...(files === undefined ? {} : { attachments: [...files] }),
          },
        ],
        ownsOutcome: true,
        operator,
        createdAt: at,
        attempts: 0,
        notBefore: at,
        rememberForMs: RESUME_KEY_TTL_MS,
      };
      if ((await outbox.add(delivery)) === 'added' && before.waitingSince !== null)
        observer?.operatorResponded?.(at - before.waitingSince);
      return { id, deliveryId: delivery.id };
    },

    end,

    async endIdle() {
      const { idleTimeoutMs, idleResume } = options.settings();
      const idle = await store.idle(now() - idleTimeoutMs, IDLE_BATCH);
      let ended = 0;
      for (const handoff of idle) {
        try {
          const result = await end(handoff.session, {
            resume: idleResume,
            startedAt: handoff.startedAt,
            activeAt: handoff.activeAt,
            why: 'idle',
          });
          if (result !== null) ended += 1;
        } catch (err) {
          logger.warn(
            { err, session: handoff.session },
            'an idle handoff could not end yet; trying again later',
          );
        }
      }
      return ended;
    },
  };
}

/**
 * Where a reply goes when no message of the session was held yet (an operator took it over from
 * the console): the chat its key names.
 */
function originOf(session: SessionKey, at: number): InboundMessage {
  const address = sessionAddressOf(session);
  return {
    id: `session:${session}`,
    ...address,
    sender: { id: address.chat.id, is_bot: false },
    elements: [],
    text: '',
    mentions_bot: false,
    platform_message_id: address.chat.id,
    received_at: at,
  };
}
