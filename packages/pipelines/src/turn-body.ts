import type { Query } from '@switchboard/core';

/**
 * The JSON a turn is sent as: the body an `http` pipeline POSTs and the request line a `process`
 * pipeline writes (docs/design.md §4). Absent optional fields are `null` so that every key is
 * always present for the receiver.
 */
export function turnBody(query: Query) {
  const { message } = query;
  return {
    id: query.id,
    attempt: query.attempt,
    pipeline: query.pipeline,
    routed_by_rule: query.routedByRule,
    session: {
      key: query.session,
      platform: message.platform,
      channel: message.channel,
      chat_type: message.chat.type,
      chat_id: message.chat.id,
      thread: message.chat.thread ?? null,
    },
    sender: { id: message.sender.id, name: message.sender.name ?? null },
    text: query.text,
    messages: query.messages.map((original) => ({
      id: original.id,
      platform_message_id: original.platform_message_id,
      text: original.text,
      sender: { id: original.sender.id, name: original.sender.name ?? null },
      received_at: original.received_at,
      elements: original.elements,
      // An edit, deletion or reaction this entry reports (docs/design.md §2 "Events"), else null.
      event: original.event ?? null,
    })),
    // The event the turn's first message reports, else null: a turn routed by an `event` rule.
    event: message.event ?? null,
    // The transcript of the handoff this turn resumes (`resume: bot`), else null.
    handoff: query.messages.find((original) => original.handoff !== undefined)?.handoff ?? null,
  };
}

/** The JSON body an `http` pipeline POSTs, for receivers written in TypeScript. */
export type HttpRequestBody = ReturnType<typeof turnBody>;
