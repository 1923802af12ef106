import type { ChannelAdapter, InboundMessage } from '@switchboard/core';
import { eventually, resolvesWithin } from '@switchboard/testkit/eventually';
import { describe, expect, it } from 'vitest';
import type { ConformanceWorld } from './fixture.js';
import type { ChannelCapabilities, ChannelHarness, TypingFailure } from './harness.js';

/** Slack between an abort or a deadline and the settling it causes, ms: timers and a loaded machine. */
const SETTLE_SLACK_MS = 500;

const CHATS = ['direct', 'group'] as const;

/** The adapter's `typing` and the harness's typing hooks, which a typing capability requires. */
function typingOf(adapter: ChannelAdapter, harness: ChannelHarness) {
  const typing = adapter.typing?.bind(adapter);
  const { typingCalls, failNextTyping } = harness;
  if (typing === undefined || typingCalls === undefined || failNextTyping === undefined) {
    throw new Error(
      'a typing harness declares typingCalls and failNextTyping, and the adapter implements typing',
    );
  }
  return { typing, typingCalls, failNextTyping };
}

/**
 * Calls `typing` and reports how it settled (`resolved`, or what it rejected with); a synchronous
 * throw fails the check, since the controller never expects one.
 */
function settling(
  typing: (origin: InboundMessage, signal: AbortSignal) => Promise<void>,
  origin: InboundMessage,
  signal: AbortSignal,
): Promise<unknown> {
  let call: Promise<void>;
  try {
    call = typing(origin, signal);
  } catch (err) {
    throw new Error('typing threw synchronously instead of rejecting', { cause: err });
  }
  return call.then(
    () => 'resolved',
    (err: unknown) => err,
  );
}

/** Typing signals: where they go, that they stop at the abort, and that failures stay quiet. */
export function typingChecks(capabilities: ChannelCapabilities, world: () => ConformanceWorld): void {
  const typingChats = CHATS.filter((chat) => chat !== 'group' || capabilities.groups);
  describe.skipIf(capabilities.typing.length === 0)('when a turn shows the bot typing', () => {
    for (const chat of typingChats) {
      const reaches = capabilities.typing.includes(chat);
      it(
        reaches
          ? `sends one typing call into the ${chat} chat of the origin`
          : `resolves without a platform call in a ${chat} chat, which has no typing signal`,
        async () => {
          const { harness, adapter } = world();
          const { typing, typingCalls } = typingOf(adapter, harness);
          const origin = harness.origin(chat);
          const other = harness.origin(chat);
          await typing(origin, new AbortController().signal);
          expect(typingCalls(origin)).toBe(reaches ? 1 : 0);
          expect(typingCalls(other)).toBe(0);
        },
      );
    }
  });

  const chat = capabilities.typing[0];
  describe.skipIf(chat === undefined)('when a typing call hangs', () => {
    it('settles at the abort (resolving, or rejecting with the signal’s reason), and the next typing call reaches the chat', async () => {
      const { harness, adapter } = world();
      const { typing, typingCalls, failNextTyping } = typingOf(adapter, harness);
      const origin = harness.origin(chat ?? 'direct');
      failNextTyping({ kind: 'hang' });
      const controller = new AbortController();
      const settled = settling(typing, origin, controller.signal);
      await eventually(() => typingCalls(origin) === 1, 5_000, 'the hung typing call at the fake');
      const reason = new Error('the turn no longer types (conformance check)');
      controller.abort(reason);
      const outcome = await resolvesWithin(
        settled,
        SETTLE_SLACK_MS,
        'the typing call settling after its abort',
      );
      if (outcome !== 'resolved') expect(outcome).toBe(reason);
      await typing(origin, new AbortController().signal);
      expect(typingCalls(origin)).toBe(2);
    });
  });

  const failures: readonly TypingFailure[] = [{ kind: 'server_error' }, { kind: 'rate_limited' }];
  describe.skipIf(chat === undefined)('when the platform refuses a typing call', () => {
    for (const failure of failures) {
      it(`settles by the deadline on ${failure.kind === 'server_error' ? 'a 500' : 'its rate limit'}, and no secret reaches a log line or the error`, async () => {
        const { harness, adapter, logs } = world();
        const { typing, failNextTyping } = typingOf(adapter, harness);
        const origin = harness.origin(chat ?? 'direct');
        failNextTyping(failure);
        // The controller aborts typing when the turn answers: at the latest, at the send deadline.
        const outcome = await resolvesWithin(
          settling(typing, origin, AbortSignal.timeout(harness.sendTimeoutMs)),
          harness.sendTimeoutMs + SETTLE_SLACK_MS,
          'the refused typing call settling',
        );
        const error =
          outcome instanceof Error
            ? JSON.stringify({
                message: outcome.message,
                details: (outcome as { details?: unknown }).details,
                stack: outcome.stack,
                cause: String(outcome.cause),
              })
            : String(outcome);
        const text = [...logs, error].join('\n');
        for (const secret of harness.secrets) expect(text).not.toContain(secret);
      });
    }
  });
}
