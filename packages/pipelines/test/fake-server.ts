import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';

/** One request the fake server received, body as raw text. */
export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** What the fake answers (a string or Buffer body as it is); `hang` never answers (until the server closes). */
export type FakeAnswer = { status: number; headers?: Record<string, string>; body?: unknown } | 'hang';

export interface FakeServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  requests: RecordedRequest[];
  /** Resolves when the next request has been received (for abort tests). */
  nextRequest(): Promise<RecordedRequest>;
  close(): Promise<void>;
}

/**
 * A real node:http server on 127.0.0.1, port 0, that records every request and answers with
 * `answer(request)`: a JSON body unless `body` is already a string.
 */
export async function startFakeServer(answer: (request: RecordedRequest) => FakeAnswer): Promise<FakeServer> {
  const requests: RecordedRequest[] = [];
  let waiters: ((request: RecordedRequest) => void)[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(request);
      for (const waiter of waiters) waiter(request);
      waiters = [];
      const reply = answer(request);
      if (reply === 'hang') return;
      const body =
        typeof reply.body === 'string' || Buffer.isBuffer(reply.body)
          ? reply.body
          : JSON.stringify(reply.body ?? {});
      res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    nextRequest: () => new Promise((resolve) => waiters.push(resolve)),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A URL on which nothing listens: a port that was free a moment ago. */
export async function refusedUrl(): Promise<string> {
  const server = await startFakeServer(() => ({ status: 200 }));
  await server.close();
  return server.url;
}

/** `startFakeServer` for a test file: every server started through it is closed after each test. */
export function useFakeServers(): (answer: (request: RecordedRequest) => FakeAnswer) => Promise<FakeServer> {
  const started: FakeServer[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((server) => server.close()));
  });
  return async (answer) => {
    const server = await startFakeServer(answer);
    started.push(server);
    return server;
  };
}

/**
 * What a server may have handed to loopback sockets beyond what the client read before it cut
 * the connection: the send buffer on one side, the receive buffer on the other.
 */
export const SOCKET_SLACK_BYTES = 8 * 1024 * 1024;

/** How a flooding answer ended: the bytes the socket took, and whether the client cut it first. */
export interface FloodOutcome {
  written: number;
  cut: boolean;
}

export interface FloodServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Resolves once the answer is over. */
  outcome: Promise<FloodOutcome>;
  close(): Promise<void>;
}

/**
 * A real node:http server on 127.0.0.1, port 0, that answers its first request 200 with
 * `contentType` and writes `line` again and again as fast as the client reads (the next write
 * waits for the socket to take the previous one), until the client closes the connection or
 * `ceilingBytes` were taken; then it ends the body with `last`. `written` counts only what the
 * socket took, so it is what the client could have read, up to the socket buffers between them.
 */
export async function startFloodServer(
  contentType: string,
  line: string,
  ceilingBytes: number,
  last: string,
): Promise<FloodServer> {
  const chunk = Buffer.from(line);
  let report: (outcome: FloodOutcome) => void = () => {};
  const outcome = new Promise<FloodOutcome>((resolve) => {
    report = resolve;
  });
  const server = createServer((_req, res) => {
    let written = 0;
    let ended = false;
    res.writeHead(200, { 'content-type': contentType });
    res.once('close', () => report({ written, cut: !ended }));
    const pump = (): void => {
      if (written >= ceilingBytes) {
        res.end(last, () => {
          ended = true;
        });
        return;
      }
      res.write(chunk, (error) => {
        if (error) return;
        written += chunk.length;
        pump();
      });
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    outcome,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** `startFloodServer` for a test file: every server started through it is closed after each test. */
export function useFloodServers(): typeof startFloodServer {
  const started: FloodServer[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((flood) => flood.close()));
  });
  return async (...args) => {
    const flood = await startFloodServer(...args);
    started.push(flood);
    return flood;
  };
}
