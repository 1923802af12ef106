import { SwitchboardError } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { abortableCall } from '../../src/outbound/abortable-call.js';

const mapped = () => new SwitchboardError('SB_CHANNEL_SEND_FAILED', { message: 'mapped' });

describe('abortableCall', () => {
  describe('when the call succeeds', () => {
    it('resolves with its result', async () => {
      expect(await abortableCall(new AbortController().signal, async () => 7, mapped)).toBe(7);
    });
  });

  describe('when the call fails', () => {
    it('rejects with the mapped error', async () => {
      const failing = async () => {
        throw new Error('socket hang up');
      };
      await expect(abortableCall(new AbortController().signal, failing, mapped)).rejects.toThrow('mapped');
    });
  });

  describe('when the deadline aborts the call in flight', () => {
    it('rejects with the signal reason, not the mapped error', async () => {
      const deadline = new AbortController();
      const reason = new Error('send deadline');
      const call = () =>
        new Promise<never>((_, reject) => {
          deadline.signal.addEventListener('abort', () => reject(new Error('aborted request')));
        });
      const pending = abortableCall(deadline.signal, call, mapped);
      deadline.abort(reason);
      await expect(pending).rejects.toBe(reason);
    });
  });

  describe('when the deadline aborts a call that ignores it', () => {
    it('rejects with the signal reason at once, and a late answer changes nothing', async () => {
      const deadline = new AbortController();
      const reason = new Error('send deadline');
      let answer: (value: number) => void = () => {};
      const call = () => new Promise<number>((resolve) => (answer = resolve));
      const pending = abortableCall(deadline.signal, call, mapped);
      deadline.abort(reason);
      await expect(pending).rejects.toBe(reason);
      answer(7);
    });
  });

  describe('when the deadline has passed already', () => {
    it('rejects with its reason without calling', async () => {
      const deadline = new AbortController();
      deadline.abort(new Error('late'));
      let called = false;
      const call = async () => {
        called = true;
      };
      await expect(abortableCall(deadline.signal, call, mapped)).rejects.toThrow('late');
      expect(called).toBe(false);
    });
  });
});
