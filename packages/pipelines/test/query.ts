import {
  aggregate,
  type InboundMessageInput,
  type PipelineRunContext,
  type Query,
  sessionKeyOf,
  silentLogger,
} from '@switchboard/core';
import { inboundMessage } from '@switchboard/testkit/inbound-message';

/** Builds a query the way the controller does: parsed messages of one session, merged by `aggregate`. */
export function queryOf(texts: string[], overrides: Partial<InboundMessageInput> = {}): Query {
  const messages = texts.map((text, index) =>
    inboundMessage({
      chat: { type: 'group', id: '-100123', thread: '7' },
      sender: { id: 'u1', name: 'Ada' },
      elements: [{ type: 'text', text }],
      text,
      platform_message_id: `m${index}`,
      received_at: 1_700_000_000_000 + index,
      ...overrides,
    }),
  );
  const session = sessionKeyOf(messages[0]!, 'thread');
  return aggregate({
    id: 'turn-1',
    session,
    pipeline: 'bot',
    attempt: 2,
    messages: messages.map((message) => ({
      message,
      session,
      pipeline: 'bot',
      routedByRule: true,
      rule: 'support',
      attempt: 2,
      acceptedAt: message.received_at,
    })),
  });
}

/** A run context with its own controller, so a test can abort the run. */
export function runContext(): PipelineRunContext & { controller: AbortController } {
  const controller = new AbortController();
  return { controller, signal: controller.signal, logger: silentLogger };
}

/** The rejection of `promise`, failing the test when it resolves. */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

/** A run's `stream` that counts the characters streamed to it, for a bound on what a channel shows. */
export function streamCounter(): { stream: (delta: string) => void; readonly characters: number } {
  let characters = 0;
  return {
    stream: (delta) => {
      characters += delta.length;
    },
    get characters() {
      return characters;
    },
  };
}
