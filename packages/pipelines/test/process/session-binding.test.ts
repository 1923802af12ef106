import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type Binding, SessionBindings } from '../../src/process/session-binding.js';

const abortReason = (signal: AbortSignal) => signal.reason;

function bindings(maxActive: number, released: Array<[string, number]> = []) {
  return new SessionBindings({
    maxActive,
    idleTimeoutMs: 1000,
    now: Date.now,
    onRelease: (session, slot) => released.push([session, slot]),
  });
}

describe('SessionBindings', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  describe('when sessions wait for room', () => {
    it('binds them first come first bound as idle sessions expire, and tells who was released', async () => {
      const released: Array<[string, number]> = [];
      const sessions = bindings(1, released);
      const never = new AbortController().signal;
      const a = await sessions.acquire('a', () => 0, never, abortReason);
      const order: string[] = [];
      const bindingOf = (session: string) => (binding: Binding) => {
        order.push(session);
        return binding;
      };
      const b = sessions.acquire('b', () => 1, never, abortReason).then(bindingOf('b'));
      const c = sessions.acquire('c', () => 2, never, abortReason).then(bindingOf('c'));
      expect(sessions.waiting).toBe(2);

      sessions.done(a);
      await vi.advanceTimersByTimeAsync(999);
      expect(order).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      expect(released).toEqual([['a', 0]]);
      const bound = await b;
      expect(bound).toMatchObject({ session: 'b', slot: 1, running: 1 });
      expect(sessions.size).toBe(1);

      sessions.done(bound);
      await vi.advanceTimersByTimeAsync(1000);
      expect(await c).toMatchObject({ session: 'c', slot: 2 });
      expect(order).toEqual(['b', 'c']);
    });

    it('keeps a session with a running turn bound however long it runs', async () => {
      const released: Array<[string, number]> = [];
      const sessions = bindings(1, released);
      await sessions.acquire('a', () => 0, new AbortController().signal, abortReason);
      await vi.advanceTimersByTimeAsync(60_000);
      expect(released).toEqual([]);
      expect(sessions.countOn(0)).toBe(1);
    });

    it('lets a waiting turn go when its signal aborts, and one whose worker died frees room at once', async () => {
      const sessions = bindings(1);
      const never = new AbortController().signal;
      // As the pool chooses: the least loaded slot still usable.
      const usable = new Set([0, 1]);
      const choose = () => [...usable].sort((x, y) => sessions.countOn(x) - sessions.countOn(y))[0] as number;
      await sessions.acquire('a', choose, never, abortReason);
      const timeout = new AbortController();
      const b = sessions.acquire('b', choose, timeout.signal, abortReason);
      const c = sessions.acquire('c', choose, never, abortReason);
      timeout.abort(new Error('timeout'));
      await expect(b).rejects.toThrow('timeout');
      expect(sessions.waiting).toBe(1);

      // The slot is unusable before its sessions are dropped (worker-slot.ts).
      usable.delete(0);
      sessions.dropSlot(0);

      expect(await c).toMatchObject({ session: 'c', slot: 1 });
      expect(sessions.countOn(0)).toBe(0);
    });

    it('gives the place of a session unbound before its turn ran to the next waiting session', async () => {
      const released: Array<[string, number]> = [];
      const sessions = bindings(1, released);
      const never = new AbortController().signal;
      const a = await sessions.acquire('a', () => 0, never, abortReason);
      const b = sessions.acquire('b', () => 1, never, abortReason);

      sessions.unbind(a);
      sessions.done(a);

      expect(await b).toMatchObject({ session: 'b', slot: 1 });
      expect(sessions.size).toBe(1);
      await vi.advanceTimersByTimeAsync(5000);
      expect(released).toEqual([]);
    });
  });

  describe('when a bound session has another turn', () => {
    it('goes to its slot at once, even while other sessions wait', async () => {
      const sessions = bindings(1);
      const never = new AbortController().signal;
      await sessions.acquire('a', () => 0, never, abortReason);
      void sessions.acquire('b', () => 1, never, abortReason);
      const again = await sessions.acquire('a', () => 1, never, abortReason);
      expect(again).toMatchObject({ slot: 0, running: 2 });
    });
  });
});
