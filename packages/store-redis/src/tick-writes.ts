import type { Socket } from 'node:net';
import { type Cluster, Redis } from 'ioredis';

/**
 * Makes the commands a connection sends in one tick of the event loop leave in one socket write.
 * ioredis writes each command to its socket as it is called, and each write is a system call:
 * under load, the scripts of many messages are called in the same tick, and those calls were
 * the gateway's largest single CPU cost. Corking the socket on the tick's first write and
 * uncorking it once the tick's callbacks and promise reactions ran sends them together (one
 * `writev`), in the order they were called; nothing waits past the tick. ioredis' own
 * auto-pipelining groups them too, at a CPU cost above the writes it saves (docs/BENCHMARKS.md).
 * A cluster client's node connections are each made so as they connect.
 */
export function writeOncePerTick(client: Redis | Cluster): void {
  if (client instanceof Redis) {
    // A reconnect opens a new socket.
    client.on('connect', () => corkEachTick((client as unknown as { stream: Socket }).stream));
    return;
  }
  client.on('+node', (node: Redis) => writeOncePerTick(node));
}

function corkEachTick(socket: Socket): void {
  const write = socket.write;
  let corked = false;
  const uncork = () => {
    corked = false;
    socket.uncork();
  };
  socket.write = function (this: Socket, ...args: unknown[]) {
    if (!corked) {
      corked = true;
      socket.cork();
      process.nextTick(uncork);
    }
    return (write as (...written: unknown[]) => boolean).apply(this, args);
  } as Socket['write'];
}
