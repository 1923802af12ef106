import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type ChannelAdapter, isSwitchboardError, sendWithDeadline } from '../../src/index.js';
import { message } from '../harness.js';

/** A channel whose send settles only when the test says so, and keeps the signal it got. */
function controllableChannel(localSend?: boolean) {
  const sends: { signal: AbortSignal; resolve: () => void; reject: (error: Error) => void }[] = [];
  const channel: Pick<ChannelAdapter, 'id' | 'send' | 'localSend'> = {
    id: 'c',
    ...(localSend === undefined ? {} : { localSend }),
    send: (_origin, _replies, signal) =>
      new Promise<void>((resolve, reject) => {
        sends.push({ signal, resolve, reject });
      }),
  };
  return { channel, sends };
}

describe('sendWithDeadline', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  describe('when the send never settles (a library that ignores the signal)', () => {
    it('aborts the signal and rejects with SB_CHANNEL_SEND_TIMEOUT at the deadline, not before', async () => {
      const { channel, sends } = controllableChannel();
      const outcome = sendWithDeadline(channel, message('A', 'hi'), [{ text: 'hi' }], 1_000).then(
        () => 'resolved',
        (error: unknown) => error,
      );
      await vi.advanceTimersByTimeAsync(999);
      expect(sends[0]?.signal.aborted).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      const error = await outcome;
      expect(isSwitchboardError(error, 'SB_CHANNEL_SEND_TIMEOUT')).toBe(true);
      expect(error).toMatchObject({
        message: 'channel "c" did not finish sending within 1000 ms',
        details: { channel: 'c', timeout_ms: 1_000 },
      });
      expect(sends[0]?.signal.aborted).toBe(true);
      expect(sends[0]?.signal.reason).toBe(error);
      // The late settlement is absorbed by the race: no unhandled rejection.
      sends[0]?.reject(new Error('late'));
    });
  });

  describe('when the send settles in time', () => {
    it('settles as the send did and leaves no timer behind', async () => {
      const { channel, sends } = controllableChannel();
      const sent = sendWithDeadline(channel, message('A', 'hi'), [{ text: 'hi' }], 1_000);
      sends[0]?.resolve();
      await expect(sent).resolves.toBeUndefined();
      expect(vi.getTimerCount()).toBe(0);

      const failed = sendWithDeadline(channel, message('A', 'hi'), [{ text: 'hi' }], 1_000);
      sends[1]?.reject(new Error('channel_not_found'));
      await expect(failed).rejects.toThrow('channel_not_found');
      expect(vi.getTimerCount()).toBe(0);
      expect(sends[1]?.signal.aborted).toBe(false);
    });
  });

  describe('when the channel sends within the process (localSend)', () => {
    it('hands a signal that never aborts, and still rejects at the deadline', async () => {
      const { channel, sends } = controllableChannel(true);
      const outcome = sendWithDeadline(channel, message('A', 'hi'), [{ text: 'hi' }], 1_000).then(
        () => 'resolved',
        (error: unknown) => error,
      );
      await vi.advanceTimersByTimeAsync(1_000);
      expect(isSwitchboardError(await outcome, 'SB_CHANNEL_SEND_TIMEOUT')).toBe(true);
      expect(sends[0]?.signal.aborted).toBe(false);
      sends[0]?.resolve();

      const sent = sendWithDeadline(channel, message('A', 'hi'), [{ text: 'hi' }], 1_000);
      sends[1]?.resolve();
      await expect(sent).resolves.toBeUndefined();
      expect(vi.getTimerCount()).toBe(0);
    });
  });
});
