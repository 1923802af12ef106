import { type Socket, connect } from 'node:net';

/** A client on a bare TCP socket, for what fetch cannot do: send half a request, or never read. */
export interface RawClient {
  socket: Socket;
  /** Everything the server sent, once it closed the connection. */
  closed: Promise<string>;
  /** What the server sent so far. */
  received(): string;
  /** Writes `text`; resolves once it is handed to the kernel. */
  write(text: string): Promise<void>;
}

/** Connects to `base` (`http://127.0.0.1:<port>`); `read: false` never reads what comes back. */
export async function connectRaw(base: string, options: { read?: boolean } = {}): Promise<RawClient> {
  const { hostname, port } = new URL(base);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => {});
  let received = '';
  if (options.read ?? true) socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  else socket.pause();
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(received)));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return {
    socket,
    closed,
    received: () => received,
    write: (text) =>
      new Promise((resolve, reject) => socket.write(text, (err) => (err ? reject(err) : resolve()))),
  };
}

/** The head of a JSON POST to `path` announcing `contentLength` bytes of body. */
export function postHead(path: string, contentLength: number): string {
  return `POST ${path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: ${contentLength}\r\n\r\n`;
}
