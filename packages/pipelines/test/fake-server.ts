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
