import {
  type InboundMessage,
  type InboundMessageInput,
  newMessageId,
  parseInboundMessage,
} from '@switchboard/core';

/**
 * A valid unified message: `hello` from person 42 in their chat with the Telegram channel `tg`,
 * received at 0, with a fresh gateway id; `overrides` replace whole fields. It goes through
 * `parseInboundMessage`, so the schema's defaults are filled in and an invalid override throws.
 */
export function inboundMessage(overrides: Partial<InboundMessageInput> = {}): InboundMessage {
  return parseInboundMessage({
    id: newMessageId(),
    platform: 'telegram',
    channel: 'tg',
    chat: { type: 'person', id: '42' },
    sender: { id: '42' },
    text: 'hello',
    platform_message_id: '42:1',
    received_at: 0,
    ...overrides,
  });
}
