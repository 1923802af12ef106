import { describe, expect, it } from 'vitest';
import { createKeyedSerializer } from '../src/keyed-serializer.js';

/** A promise and the function that resolves it. */
function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

describe('keyed serializer', () => {
  describe('when tasks share a key', () => {
    it('runs them one after the other, in call order, also after a failure', async () => {
      const serializer = createKeyedSerializer();
      const gate = deferred();
      const order: string[] = [];
      const first = serializer.run('k', async () => {
        order.push('first started');
        await gate.promise;
        order.push('first ended');
        throw new Error('first failed');
      });
      const second = serializer.run('k', async () => {
        order.push('second');
        return 2;
      });
      await Promise.resolve();
      expect(order).toEqual(['first started']);
      gate.resolve();
      await expect(first).rejects.toThrow('first failed');
      await expect(second).resolves.toBe(2);
      expect(order).toEqual(['first started', 'first ended', 'second']);
    });
  });

  describe('when tasks have different keys', () => {
    it('runs them concurrently', async () => {
      const serializer = createKeyedSerializer();
      const gate = deferred();
      const blocked = serializer.run('a', () => gate.promise);
      await expect(serializer.run('b', async () => 'b')).resolves.toBe('b');
      gate.resolve();
      await blocked;
    });
  });

  describe('when a task throws before returning its promise', () => {
    it('rejects its run and frees the key', async () => {
      const serializer = createKeyedSerializer();
      await expect(
        serializer.run('k', () => {
          throw new Error('sync failure');
        }),
      ).rejects.toThrow('sync failure');
      await expect(serializer.run('k', async () => 'next')).resolves.toBe('next');
    });
  });

  describe('idle', () => {
    it('waits for the tasks queued so far under the key', async () => {
      const serializer = createKeyedSerializer();
      const gate = deferred();
      let done = false;
      void serializer.run('k', async () => {
        await gate.promise;
        done = true;
      });
      const idle = serializer.idle('k').then(() => done);
      gate.resolve();
      await expect(idle).resolves.toBe(true);
    });
  });
});
