import WebSocket from 'ws';
import { eventually } from '../../apps/gateway/test/serve-process.js';

/**
 * The live V8 heap of a gateway started with `NODE_OPTIONS=--inspect=127.0.0.1:0`
 * (`LIVE_HEAP_ENV`): a full garbage collection through the inspector, then `heapUsed`. The heap
 * in `/metrics` is a sawtooth whose major collections come minutes apart at load, which hides or
 * fakes a one-minute trend; what survives a forced collection is what a leak would grow.
 */
export interface LiveHeap {
  readBytes(): Promise<number>;
  close(): void;
}

/** Environment for `startServe` that opens the inspector on a free loopback port. */
export const LIVE_HEAP_ENV = {
  NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --inspect=127.0.0.1:0`.trim(),
};

/** Connects to the inspector whose address the gateway printed on stderr. */
export async function connectLiveHeap(stderr: readonly string[]): Promise<LiveHeap> {
  const url = await eventually(
    () => /Debugger listening on (ws:\/\/\S+)/.exec(stderr.join(''))?.[1],
    10_000,
    'the inspector address on stderr',
  );
  const socket = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  let nextId = 1;
  const waiting = new Map<number, (result: unknown) => void>();
  socket.on('message', (data: Buffer) => {
    const message = JSON.parse(data.toString()) as { id?: number; result?: unknown };
    if (message.id !== undefined) waiting.get(message.id)?.(message.result);
    waiting.delete(message.id ?? -1);
  });
  const call = (method: string, params: object = {}) =>
    new Promise<unknown>((resolve) => {
      const id = nextId++;
      waiting.set(id, resolve);
      socket.send(JSON.stringify({ id, method, params }));
    });
  return {
    async readBytes() {
      await call('HeapProfiler.collectGarbage');
      const answer = (await call('Runtime.evaluate', {
        expression: 'process.memoryUsage().heapUsed',
        returnByValue: true,
      })) as { result: { value: number } };
      return answer.result.value;
    },
    close: () => socket.close(),
  };
}
