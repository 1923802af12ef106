import { describe, expect, it } from 'vitest';
import { type ConformanceWorld, uniqueText } from './fixture.js';
import type { ChannelCapabilities } from './harness.js';

/** Secrets stay out of logs and errors, whatever fails. */
export function secretChecks(capabilities: ChannelCapabilities, world: () => ConformanceWorld): void {
  describe('when deliveries are refused and sends fail (or succeed)', () => {
    it('writes no configured secret into a log line or an error message', async () => {
      const { harness, adapter, logs } = world();
      if (capabilities.signedInbound) {
        await harness.deliver(harness.event({ chat: 'direct', text: uniqueText('forged') }), 'forged');
        await harness.deliver(harness.event({ chat: 'direct', text: uniqueText('unsigned') }), 'unsigned');
      }
      await harness.deliver(harness.event({ chat: 'direct', text: uniqueText('signed') }), 'signed');
      const errors: string[] = [];
      if (capabilities.platformSends) {
        const origin = harness.origin('direct');
        const signal = new AbortController().signal;
        await adapter.send(origin, [{ text: 'fine' }], signal);
        harness.failNextSend({ kind: 'auth' });
        const error = await adapter.send(origin, [{ text: 'refused token' }], signal).then(
          () => new Error('the send with a refused token succeeded'),
          (err: unknown) => err,
        );
        expect(error).toMatchObject({ code: 'SB_CHANNEL_AUTH_FAILED' });
        errors.push(
          JSON.stringify({
            message: (error as Error).message,
            details: (error as { details?: unknown }).details,
            stack: (error as Error).stack,
          }),
        );
      }
      expect(logs.length).toBeGreaterThan(0);
      const text = [...logs, ...errors].join('\n');
      for (const secret of harness.secrets) expect(text).not.toContain(secret);
    });
  });
}
