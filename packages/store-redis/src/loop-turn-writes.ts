import type { Socket } from 'node:net';
import { type Cluster, Redis } from 'ioredis';

/**
 * Makes the commands a connection sends in one turn of the event loop leave in one socket write.
 * ioredis writes each command to its socket as it is called, and each write is a system call:
 * under load, the scripts of many messages are called in the same turn (each HTTP request, each
 * Redis reply read in it), and those writes were the gateway's largest single CPU cost. The socket
 * is corked at the turn's first write and uncorked in its check phase (`setImmediate`), once every
 * I/O callback of the turn ran: the commands leave together (one `writev`), in the order they
 * were called, and none waits past the turn. Uncorking at the end of each callback
 * (`process.nextTick`) grouped only the commands of one callback, and saved less. ioredis' own
 * auto-pipelining groups them too, at a CPU cost above the writes it saves (docs/BENCHMARKS.md).
 * A cluster client's node connections are each made so as they connect.
 */
export function writeOncePerLoopTurn(client: Redis | Cluster): void {
  if (client instanceof Redis) {
    // A reconnect opens a new socket.
    client.on('connect', () => corkEachLoopTurn((client as unknown as { stream: Socket }).stream));
    return;
  }
  client.on('+node', (node: Redis) => writeOncePerLoopTurn(node));
}

function corkEachLoopTurn(socket: Socket): void {
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
      setImmediate(uncork);
    }
    return (write as (...written: unknown[]) => boolean).apply(this, args);
  } as Socket['write'];
}
