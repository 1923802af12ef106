import { describe, expect, it } from 'vitest';
import { ActiveSessions } from '../src/active-sessions.js';

const WINDOW_MS = 60_000;

describe('active sessions', () => {
  it('counts each session once, however many messages it sends', () => {
    const active = new ActiveSessions(WINDOW_MS);
    for (let at = 0; at < 10_000; at += 100) {
      active.touch('a', at);
      active.touch('b', at);
    }
    expect(active.count(10_000)).toBe(2);
  });

  it('forgets a session once the window has passed since its last message', () => {
    const active = new ActiveSessions(WINDOW_MS);
    active.touch('quiet', 0);
    active.touch('busy', 0);
    active.touch('busy', 30_000);
    expect(active.count(WINDOW_MS - 1)).toBe(2);
    expect(active.count(WINDOW_MS)).toBe(1);
    expect(active.count(30_000 + WINDOW_MS)).toBe(0);
  });

  it('keeps a busy session that the earliest sessions were forgotten around', () => {
    const active = new ActiveSessions(WINDOW_MS);
    for (let i = 0; i < 1000; i++) active.touch(`s${i}`, i * 10);
    active.touch('s0', 20_000);
    // Every session but s0 is idle by now; s0 spoke 20 s later than the first of them.
    expect(active.count(10_000 + WINDOW_MS)).toBe(1);
    expect(active.count(20_000 + WINDOW_MS)).toBe(0);
  });
});
