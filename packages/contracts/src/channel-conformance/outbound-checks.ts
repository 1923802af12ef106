import { createReplyStream, isSwitchboardError, sendWithDeadline, silentLogger } from '@switchboard/core';
import { resolvesWithin } from '@switchboard/testkit/eventually';
import { describe, expect, it } from 'vitest';
import { type ConformanceWorld, uniqueText } from './fixture.js';
import type { ChannelCapabilities } from './harness.js';

/** Slack between the deadline and the rejection it causes, ms: timers and a loaded machine. */
const DEADLINE_SLACK_MS = 500;
/** How much earlier than `edit_interval` two preview calls may arrive: the network's jitter, ms. */
const ARRIVAL_JITTER_MS = 30;

/** Send deadlines, rate limits, splitting, pacing and previews: what goes out. */
export function outboundChecks(capabilities: ChannelCapabilities, world: () => ConformanceWorld): void {
  describe.skipIf(!capabilities.platformSends)('when a send hangs past send_timeout', () => {
    it('rejects with a retryable SB_CHANNEL_SEND_TIMEOUT within the timeout, the adapter settles, and the next send into the chat meets its own deadline', async () => {
      const { harness, adapter } = world();
      const origin = harness.origin('direct');
      harness.failNextSend({ kind: 'hang' });
      let adapterSend: Promise<unknown> | undefined;
      // The caller's deadline, as the outbox runs it; the adapter's own promise is watched too.
      const watched = {
        id: adapter.id,
        send: (...args: Parameters<typeof adapter.send>) => {
          const sending = adapter.send(...args);
          adapterSend = sending.then(
            () => 'resolved',
            (err: unknown) => err,
          );
          return sending;
        },
      };
      const startedAt = Date.now();
      const error = await sendWithDeadline(
        watched,
        origin,
        [{ text: 'never answered' }],
        harness.sendTimeoutMs,
      ).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(Date.now() - startedAt).toBeLessThan(harness.sendTimeoutMs + DEADLINE_SLACK_MS);
      expect(isSwitchboardError(error, 'SB_CHANNEL_SEND_TIMEOUT')).toBe(true);
      expect(isSwitchboardError(error) && error.retryable).toBe(true);
      // The adapter itself stops at the abort: it rejects with the signal's reason, holding nothing.
      const settled = await resolvesWithin(
        adapterSend ?? Promise.resolve('never called'),
        DEADLINE_SLACK_MS,
        "the adapter's own send settling after its abort",
      );
      expect(settled).toBe(error);
      // The hung call must not hold the chat either: the next send makes its own deadline.
      await sendWithDeadline(adapter, origin, [{ text: 'after the hang' }], harness.sendTimeoutMs);
      expect(harness.delivered(origin)).toEqual(['after the hang']);
    });
  });

  describe.skipIf(!capabilities.platformSends)('when the platform answers a send with its rate limit', () => {
    it('rejects with a retryable SB_CHANNEL_RATE_LIMITED carrying the hint as retryAfterMs, or waits the hint out and delivers once', async () => {
      const { harness, adapter } = world();
      const origin = harness.origin('direct');
      const hintMs = harness.rateLimitHintMs;
      harness.failNextSend({ kind: 'rate_limited' });
      const text = uniqueText('rate limited');
      const startedAt = Date.now();
      const outcome = await adapter.send(origin, [{ text }], new AbortController().signal).then(
        () => undefined,
        (err: unknown) => err,
      );
      if (outcome === undefined) {
        expect(Date.now() - startedAt).toBeGreaterThanOrEqual(hintMs - ARRIVAL_JITTER_MS);
        expect(harness.delivered(origin)).toEqual([text]);
        return;
      }
      expect(isSwitchboardError(outcome, 'SB_CHANNEL_RATE_LIMITED')).toBe(true);
      expect(isSwitchboardError(outcome) && outcome.retryable).toBe(true);
      expect(isSwitchboardError(outcome) && outcome.retryAfterMs).toBeGreaterThanOrEqual(hintMs);
      expect(harness.delivered(origin)).toEqual([]);
    });
  });

  describe.skipIf(capabilities.splitLimit === undefined)(
    'when a reply is longer than one platform message',
    () => {
      it('delivers it split at the platform limit, in order, every part within the limit', async () => {
        const { harness, adapter } = world();
        const limit = capabilities.splitLimit ?? 0;
        const origin = harness.origin('direct');
        const text = 'a'.repeat(limit) + 'b'.repeat(limit) + 'c'.repeat(limit / 2);
        await adapter.send(origin, [{ text }], new AbortController().signal);
        const parts = harness.delivered(origin);
        expect(parts.map((part) => part.length)).toEqual([limit, limit, limit / 2]);
        expect(parts.join('')).toBe(text);
      });
    },
  );

  describe.skipIf(!capabilities.resendsSkipDelivered)(
    'when a send split over several calls fails retryably after its first call, and is tried again',
    () => {
      it('shows every part once: the parts delivered before the failure are not posted again', async () => {
        const { harness, adapter } = world();
        const limit = capabilities.splitLimit;
        if (limit === undefined) throw new Error('resendsSkipDelivered needs a splitLimit');
        const origin = harness.origin('direct');
        // Six parts: more than one call even where one call carries five messages (LINE's).
        const parts = [...'abcdef'].map((letter) => letter.repeat(limit));
        harness.failNextSend({ kind: 'rate_limited' }, { after: 1 });
        const turn = uniqueText('turn');
        const tryOnce = () =>
          adapter.send(origin, [{ text: parts.join('') }], new AbortController().signal, { turn });
        const failure = await tryOnce().then(
          () => undefined,
          (err: unknown) => err,
        );
        expect(failure, 'the first try fails after its first call').toBeDefined();
        expect(isSwitchboardError(failure) && failure.retryable).toBe(true);
        // The first call went through before the failure: there is something not to post again.
        expect(harness.delivered(origin).length).toBeGreaterThan(0);
        await tryOnce();
        expect(harness.delivered(origin)).toEqual(parts);
      });
    },
  );

  describe.skipIf(!capabilities.pacing)('when five times the allowed rate is offered into one chat', () => {
    it("delivers every reply with 0 violations of the fake's rate limits", async () => {
      const { harness, adapter } = world();
      const limit = harness.perChatLimit;
      if (limit === undefined || harness.rateLimitViolations === undefined) {
        throw new Error('a pacing harness declares perChatLimit and rateLimitViolations');
      }
      const origin = harness.origin('direct');
      const before = harness.rateLimitViolations();
      const texts = Array.from({ length: 5 * limit.limit }, (_, index) => `paced ${index}`);
      await Promise.all(texts.map((text) => adapter.send(origin, [{ text }], new AbortController().signal)));
      expect(harness.rateLimitViolations() - before).toBe(0);
      expect([...harness.delivered(origin)].sort()).toEqual([...texts].sort());
    });
  });

  describe.skipIf(!capabilities.preview)('when an answer is streamed', () => {
    it('posts and edits the preview no more often than edit_interval, and the final send edits it into the answer', async () => {
      const { harness, adapter } = world();
      const preview = adapter.preview?.bind(adapter);
      if (preview === undefined || harness.previewCalls === undefined) {
        throw new Error('a preview harness declares previewCalls and the adapter implements preview');
      }
      const origin = harness.origin('direct');
      const stream = createReplyStream({
        preview: (text, draft, signal) => preview(origin, text, draft, signal),
        editIntervalMs: harness.editIntervalMs,
        finishTimeoutMs: harness.sendTimeoutMs,
        logger: silentLogger,
      });
      const pieces = Array.from({ length: 30 }, (_, index) => `word${index} `);
      for (const piece of pieces) {
        stream.push(piece);
        await new Promise((resolve) => setTimeout(resolve, harness.editIntervalMs / 10));
      }
      const draft = await stream.finish();
      expect(draft).toBeDefined();
      const answer = pieces.join('').trim();
      await sendWithDeadline(adapter, origin, [{ text: answer }], harness.sendTimeoutMs, { draft });
      const calls = harness.previewCalls(origin);
      expect(calls.length).toBeGreaterThanOrEqual(3);
      const gaps = calls.slice(1).map((at, index) => at - (calls[index] ?? at));
      expect(gaps.filter((gap) => gap < harness.editIntervalMs - ARRIVAL_JITTER_MS)).toEqual([]);
      // One message shows the answer: the preview, edited; nothing else was posted.
      expect(harness.delivered(origin)).toHaveLength(1);
    });
  });
}
