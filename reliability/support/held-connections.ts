import { type ClientRequest, request } from 'node:http';
import { type Socket, connect } from 'node:net';

/** A connection the test holds open against the gateway; `close` ends it from the client side. */
export interface HeldConnection {
  /** The HTTP status the gateway answered, or null while it has not answered. */
  status: number | null;
  /** False once the connection closed, from either side. */
  open: boolean;
  close(): void;
}

/** A held event stream: what the gateway answered, to tell an open stream from a refusal. */
export interface HeldEventStream extends HeldConnection {
  /** The answer's headers, or null while it has not answered. */
  headers: Headers | null;
}

/** A held slow upload: how much of its body it has sent, to tell it is still trickling. */
export interface SlowUpload extends HeldConnection {
  /** Body bytes written so far, the opening `{` included; grows by one every interval. */
  bodyBytesSent: number;
}

/**
 * Opens a server-sent event stream (`GET url`) on its own socket and resolves once the gateway
 * answered its headers (any status) or `timeoutMs` passed (status null: the gateway never answered).
 */
export function openEventStream(url: string, timeoutMs: number): Promise<HeldEventStream> {
  return new Promise((resolve) => {
    let req: ClientRequest | undefined;
    const held: HeldEventStream = { status: null, headers: null, open: true, close: () => req?.destroy() };
    const timer = setTimeout(() => resolve(held), timeoutMs);
    req = request(url, { agent: false, headers: { accept: 'text/event-stream' } }, (response) => {
      held.status = response.statusCode ?? null;
      held.headers = new Headers();
      for (const [name, value] of Object.entries(response.headers)) {
        if (typeof value === 'string') held.headers.set(name, value);
      }
      // Read and drop events, so that the gateway is never blocked on this client's window.
      response.resume();
      clearTimeout(timer);
      resolve(held);
    });
    req.once('close', () => {
      held.open = false;
    });
    req.on('error', () => {
      clearTimeout(timer);
      resolve(held);
    });
    req.end();
  });
}

/**
 * Starts a POST of a `bodyBytes` JSON body to `url` over a raw socket and sends one byte of it
 * every `intervalMs` — a slow or stalled client holding a request open. Resolves once connected.
 */
export function startSlowUpload(
  url: string,
  options: { bodyBytes: number; intervalMs: number },
): Promise<SlowUpload> {
  const target = new URL(url);
  return new Promise((resolve) => {
    const socket: Socket = connect(Number(target.port), target.hostname);
    let timer: NodeJS.Timeout | undefined;
    const held: SlowUpload = {
      status: null,
      open: true,
      bodyBytesSent: 0,
      close: () => {
        clearInterval(timer);
        socket.destroy();
      },
    };
    socket.on('data', (chunk: Buffer) => {
      const match = /^HTTP\/1\.1 (\d{3})/.exec(chunk.toString('latin1'));
      if (match !== null) held.status = Number(match[1]);
    });
    socket.on('error', () => {
      clearInterval(timer);
      resolve(held);
    });
    socket.on('close', () => {
      held.open = false;
      clearInterval(timer);
    });
    socket.on('connect', () => {
      socket.write(
        `POST ${target.pathname} HTTP/1.1\r\nhost: ${target.host}\r\ncontent-type: application/json\r\ncontent-length: ${options.bodyBytes}\r\n\r\n{`,
      );
      held.bodyBytesSent = 1;
      timer = setInterval(() => {
        // Never completes the body within a scenario: one space per tick keeps it pending.
        if (held.bodyBytesSent < options.bodyBytes - 1 && socket.writable) {
          socket.write(' ');
          held.bodyBytesSent += 1;
        }
      }, options.intervalMs);
      resolve(held);
    });
  });
}
