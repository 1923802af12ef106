import { type Handoff, type HandoffEntry, isMediaElement, sessionAddressOf } from '@switchboard/core';

/** Where a session's messages come from, as far as its key tells when no message was held yet. */
function addressOf(handoff: Handoff): { channel: string | null; chatId: string | null } {
  if (handoff.origin !== null) return { channel: handoff.origin.channel, chatId: handoff.origin.chat.id };
  try {
    const address = sessionAddressOf(handoff.session);
    return { channel: address.channel, chatId: address.chat.id };
  } catch {
    return { channel: null, chatId: null };
  }
}

/** A handoff as the admin API answers it (`GET /admin/handoffs`, `GET /admin/sessions/{key}`). */
export function handoffView(handoff: Handoff) {
  const { channel, chatId } = addressOf(handoff);
  const { origin } = handoff;
  return {
    session: handoff.session,
    reason: handoff.reason,
    by: handoff.by,
    started_at: handoff.startedAt,
    active_at: handoff.activeAt,
    pipeline: handoff.pipeline,
    channel,
    chat_id: chatId,
    sender: origin === null ? null : { id: origin.sender.id, name: origin.sender.name ?? null },
    held: handoff.held,
    unread: handoff.unread,
    waiting_since: handoff.waitingSince,
    last_text: origin === null ? null : origin.text,
  };
}
export type HandoffView = ReturnType<typeof handoffView>;

/**
 * One transcript entry as the admin API answers it, with the files it carried named (a user's
 * by type, name and size as the platform gave them; an operator's as sent, without their bytes).
 */
export function entryView(entry: HandoffEntry) {
  return entry.from === 'user'
    ? {
        seq: entry.seq,
        at: entry.at,
        from: entry.from,
        id: entry.message.id,
        name: entry.message.sender.name ?? null,
        text: entry.message.text,
        attachments: entry.message.elements.filter(isMediaElement).map((element) => ({
          type: element.type,
          name: element.name ?? null,
          mime_type: element.mime_type ?? null,
          size: element.size ?? null,
        })),
      }
    : {
        seq: entry.seq,
        at: entry.at,
        from: entry.from,
        id: entry.id,
        name: entry.operator,
        text: entry.text,
        attachments: (entry.attachments ?? []).map((attachment) => ({
          type: attachment.type,
          name: attachment.name ?? null,
          mime_type: attachment.mime_type ?? null,
          url: attachment.url ?? null,
        })),
      };
}
