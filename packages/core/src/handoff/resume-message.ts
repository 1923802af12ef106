import { type HandoffContext, type InboundMessage, newMessageId } from '../model/message.js';
import type { Handoff, HandoffEntry } from '../ports/handoff-store.js';

/** Transcript entries a resumed turn carries at most (the latest): a model's context is bounded. */
const MAX_CARRIED_ENTRIES = 200;

/** The transcript as a resumed turn carries it (`InboundMessage.handoff`): its latest entries. */
function handoffContextOf(handoff: Handoff, transcript: readonly HandoffEntry[]): HandoffContext {
  return {
    reason: handoff.reason,
    by: handoff.by,
    started_at: handoff.startedAt,
    transcript: transcript.slice(-MAX_CARRIED_ENTRIES).map((entry) =>
      entry.from === 'user'
        ? {
            from: 'user' as const,
            at: entry.at,
            id: entry.message.id,
            ...(entry.message.sender.name === undefined ? {} : { name: entry.message.sender.name }),
            text: entry.message.text,
          }
        : {
            from: 'operator' as const,
            at: entry.at,
            id: entry.id,
            name: entry.operator,
            text: entry.text,
            ...(entry.attachments === undefined ? {} : { attachments: entry.attachments }),
          },
    ),
  };
}

/**
 * The one message a handoff ending with `resume: bot` hands the bot (docs/design.md §2
 * "Handoff"): the user messages held meanwhile merged — texts one per line, elements in order,
 * from the last one's sender and chat — carrying the whole transcript, operator replies
 * included. Null when no user message was held: the bot has nothing to answer.
 */
export function resumeMessageOf(
  handoff: Handoff,
  transcript: readonly HandoffEntry[],
  at: number,
): InboundMessage | null {
  const held = transcript.flatMap((entry) => (entry.from === 'user' ? [entry.message] : []));
  const last = held.at(-1);
  if (last === undefined) return null;
  return {
    id: newMessageId(),
    platform: last.platform,
    channel: last.channel,
    ...(last.tenant === undefined ? {} : { tenant: last.tenant }),
    chat: last.chat,
    sender: last.sender,
    elements: held.flatMap((message) => message.elements),
    text: held
      .map((message) => message.text)
      .filter((text) => text !== '')
      .join('\n'),
    mentions_bot: held.some((message) => message.mentions_bot),
    platform_message_id: last.platform_message_id,
    received_at: at,
    handoff: handoffContextOf(handoff, transcript),
  };
}
