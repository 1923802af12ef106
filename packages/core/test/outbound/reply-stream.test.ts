import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type ReplyStream, type ShowPreview, createReplyStream, silentLogger } from '../../src/index.js';

/** A channel's preview whose calls settle when the test says so, each recorded with its clock time. */
function fakePreview() {
  const calls: {
    text: string;
    draft: string | undefined;
    at: number;
    signal: AbortSignal;
    resolve: (ref: string) => void;
    reject: (error: Error) => void;
  }[] = [];
  const preview = (text: string, draft: string | undefined, signal: AbortSignal) =>
    new Promise<string>((resolve, reject) => {
      calls.push({ text, draft, at: Date.now(), signal, resolve, reject });
    });
  return { calls, preview };
}

/** A channel's preview that answers at once: the post with ref `m1`, edits with the same ref. */
function instantPreview() {
  const calls: { text: string; draft: string | undefined; at: number }[] = [];
  const preview = async (text: string, draft: string | undefined) => {
    calls.push({ text, draft, at: Date.now() });
    return draft ?? 'm1';
  };
  return { calls, preview };
}

function streamOf(preview: ShowPreview, finishTimeoutMs = 30_000): ReplyStream {
  return createReplyStream({ preview, editIntervalMs: 1_000, finishTimeoutMs, logger: silentLogger });
}

describe('createReplyStream', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  describe('when pieces arrive faster than the edit interval', () => {
    it('posts the first, then edits at most once per interval with the text so far', async () => {
      const { calls, preview } = instantPreview();
      const stream = streamOf(preview);
      const start = Date.now();
      // 200 pieces, one every 20 ms: 4 s of streaming.
      for (let i = 0; i < 200; i++) {
        stream.push(`t${i} `);
        await vi.advanceTimersByTimeAsync(20);
      }
      const draft = stream.finish();
      await vi.advanceTimersByTimeAsync(1_000);
      expect(await draft).toBe('m1');

      expect(calls[0]).toMatchObject({ text: 't0 ', draft: undefined, at: start });
      expect(calls.slice(1).every((call) => call.draft === 'm1')).toBe(true);
      // 4 s of text: the post and one edit per second, never two within a second.
      expect(calls.length).toBeLessThanOrEqual(5);
      for (let i = 1; i < calls.length; i++) {
        expect((calls[i]?.at ?? 0) - (calls[i - 1]?.at ?? 0)).toBeGreaterThanOrEqual(1_000);
      }
      // Each edit shows everything pushed before it: coalesced, not one edit per piece.
      const full = Array.from({ length: 200 }, (_, i) => `t${i} `).join('');
      for (const call of calls) expect(full.startsWith(call.text)).toBe(true);
    });

    it('hands back the draft only once the interval since the last preview has passed', async () => {
      const { calls, preview } = instantPreview();
      const stream = streamOf(preview);
      stream.push('hello');
      await vi.advanceTimersByTimeAsync(300);
      let settled = false;
      const draft = stream.finish().then((ref) => {
        settled = true;
        return ref;
      });
      await vi.advanceTimersByTimeAsync(650);
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(50);
      expect(await draft).toBe('m1');
      expect(calls).toHaveLength(1);
    });
  });

  describe('when a preview call is slow', () => {
    it('starts no other call meanwhile and then edits once with everything that came', async () => {
      const { calls, preview } = fakePreview();
      const stream = streamOf(preview);
      stream.push('a');
      await vi.advanceTimersByTimeAsync(0);
      calls[0]?.resolve('m1');
      await vi.advanceTimersByTimeAsync(1_000);
      stream.push('b');
      await vi.advanceTimersByTimeAsync(0);
      expect(calls).toHaveLength(2);
      // The edit hangs for 5 s while 50 pieces arrive.
      for (let i = 0; i < 50; i++) {
        stream.push('c');
        await vi.advanceTimersByTimeAsync(100);
      }
      expect(calls).toHaveLength(2);
      calls[1]?.resolve('m1');
      await vi.advanceTimersByTimeAsync(999);
      expect(calls).toHaveLength(2);
      await vi.advanceTimersByTimeAsync(1);
      expect(calls).toHaveLength(3);
      expect(calls[2]).toMatchObject({ text: `ab${'c'.repeat(50)}`, draft: 'm1' });
    });

    it('waits for the call in flight at finish, within the deadline, then abandons it', async () => {
      const { calls, preview } = fakePreview();
      const stream = streamOf(preview, 5_000);
      stream.push('a');
      await vi.advanceTimersByTimeAsync(0);
      calls[0]?.resolve('m1');
      await vi.advanceTimersByTimeAsync(1_000);
      stream.push('b');
      await vi.advanceTimersByTimeAsync(0);
      const draft = stream.finish();
      await vi.advanceTimersByTimeAsync(5_000);
      expect(calls[1]?.signal.aborted).toBe(true);
      calls[1]?.reject(new Error('aborted'));
      // The post succeeded: the final send edits it, whatever became of the edit.
      expect(await draft).toBe('m1');
    });

    it('hands back the ref of a post abandoned at the deadline that answers once aborted, so the final send edits it', async () => {
      const { calls, preview } = fakePreview();
      const stream = streamOf(preview, 5_000);
      stream.push('a');
      await vi.advanceTimersByTimeAsync(0);
      const draft = stream.finish();
      await vi.advanceTimersByTimeAsync(5_000);
      expect(calls[0]?.signal.aborted).toBe(true);
      // The platform had posted it: without its ref the final send would post the answer a second time.
      calls[0]?.resolve('m1');
      expect(await draft).toBe('m1');
    });

    it('hands back the draft only once an edit abandoned at the deadline has settled, so it cannot overwrite the final text', async () => {
      const { calls, preview } = fakePreview();
      const stream = streamOf(preview, 5_000);
      stream.push('a');
      await vi.advanceTimersByTimeAsync(0);
      calls[0]?.resolve('m1');
      await vi.advanceTimersByTimeAsync(1_000);
      stream.push('b');
      await vi.advanceTimersByTimeAsync(0);
      let settled = false;
      const draft = stream.finish().then((ref) => {
        settled = true;
        return ref;
      });
      await vi.advanceTimersByTimeAsync(5_000);
      expect(calls[1]?.signal.aborted).toBe(true);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(settled).toBe(false);
      calls[1]?.reject(new Error('aborted'));
      expect(await draft).toBe('m1');
    });

    it('gives up on a call that ignores its abort one more deadline later', async () => {
      const { calls, preview } = fakePreview();
      const stream = streamOf(preview, 5_000);
      stream.push('a');
      await vi.advanceTimersByTimeAsync(0);
      let settled = false;
      const draft = stream.finish().then((ref) => {
        settled = true;
        return ref;
      });
      await vi.advanceTimersByTimeAsync(9_999);
      expect(calls[0]?.signal.aborted).toBe(true);
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(await draft).toBeUndefined();
    });
  });

  describe('when a preview call fails', () => {
    it('skips a failed edit and edits again with the next piece', async () => {
      const { calls, preview } = fakePreview();
      const stream = streamOf(preview);
      stream.push('a');
      await vi.advanceTimersByTimeAsync(0);
      calls[0]?.resolve('m1');
      await vi.advanceTimersByTimeAsync(1_000);
      stream.push('b');
      await vi.advanceTimersByTimeAsync(0);
      calls[1]?.reject(new Error('429'));
      await vi.advanceTimersByTimeAsync(2_000);
      expect(calls).toHaveLength(2);
      stream.push('c');
      await vi.advanceTimersByTimeAsync(0);
      expect(calls[2]).toMatchObject({ text: 'abc', draft: 'm1' });
    });

    it('stops previews after a failed post and hands back no draft, so the answer is posted whole', async () => {
      const { calls, preview } = fakePreview();
      const stream = streamOf(preview);
      stream.push('a');
      await vi.advanceTimersByTimeAsync(0);
      calls[0]?.reject(new Error('network'));
      await vi.advanceTimersByTimeAsync(0);
      for (let i = 0; i < 5; i++) {
        stream.push('b');
        await vi.advanceTimersByTimeAsync(1_000);
      }
      expect(calls).toHaveLength(1);
      await expect(stream.finish()).resolves.toBeUndefined();
    });
  });

  describe('when the text is blank so far', () => {
    it('posts nothing until some text shows', async () => {
      const { calls, preview } = instantPreview();
      const stream = streamOf(preview);
      stream.push('\n');
      stream.push(' ');
      await vi.advanceTimersByTimeAsync(2_000);
      expect(calls).toHaveLength(0);
      stream.push('x');
      await vi.advanceTimersByTimeAsync(0);
      expect(calls).toEqual([expect.objectContaining({ text: '\n x', draft: undefined })]);
    });
  });

  describe('when the turn fails', () => {
    it('aborts the call in flight and ignores what the pipeline still pushes', async () => {
      const { calls, preview } = fakePreview();
      const stream = streamOf(preview);
      stream.push('a');
      await vi.advanceTimersByTimeAsync(0);
      stream.cancel();
      expect(calls[0]?.signal.aborted).toBe(true);
      stream.push('b');
      await vi.advanceTimersByTimeAsync(5_000);
      expect(calls).toHaveLength(1);
    });

    it('hands an aborted signal to a preview call that was about to start when it was cancelled', async () => {
      const { calls, preview } = fakePreview();
      const stream = streamOf(preview);
      stream.push('a');
      stream.cancel();
      await vi.advanceTimersByTimeAsync(0);
      expect(calls.map((call) => call.signal.aborted)).toEqual([true]);
    });
  });
});
