import {
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  createServer,
} from 'node:http';
import type { AddressInfo } from 'node:net';

export interface PipelineRequest {
  id: string;
  attempt: number;
  session: { key: string; chat_id: string };
  text: string;
  messages: Array<{ id: string; text: string }>;
}

export interface FakePipeline {
  url: string;
  requests: PipelineRequest[];
  /** The headers of each request, in the order of `requests`. */
  headers: IncomingHttpHeaders[];
  /** Largest number of requests being answered at once. */
  maxConcurrent: number;
  /** Decides each answer: status and body; may wait. Defaults to an echo after `delayMs`. */
  respond: (request: PipelineRequest) => Promise<{ status: number; body?: unknown }>;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A bot backend for the `http` pipeline: a real HTTP server on 127.0.0.1 that records requests. */
export async function startFakePipeline(options: { delayMs?: number } = {}): Promise<FakePipeline> {
  let concurrent = 0;
  const fake: FakePipeline = {
    url: '',
    requests: [],
    headers: [],
    maxConcurrent: 0,
    respond: async (request) => {
      await sleep(options.delayMs ?? 0);
      return { status: 200, body: { replies: [{ text: `echo: ${request.text}` }] } };
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => {
      raw += chunk.toString();
    });
    req.on('end', async () => {
      const request = JSON.parse(raw) as PipelineRequest;
      fake.requests.push(request);
      fake.headers.push(req.headers);
      concurrent += 1;
      fake.maxConcurrent = Math.max(fake.maxConcurrent, concurrent);
      try {
        const { status, body } = await fake.respond(request);
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body ?? {}));
      } finally {
        concurrent -= 1;
      }
    });
  });
  server.keepAliveTimeout = 1;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/answer`;
  return fake;
}

/**
 * A bot backend that holds every request until `release()`, then answers `done: <text>`: turns
 * stay running for as long as a test needs them to.
 */
export async function startGatedPipeline(): Promise<FakePipeline & { release: () => void }> {
  const backend = await startFakePipeline();
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  backend.respond = async (request) => {
    await gate;
    return { status: 200, body: { replies: [{ text: `done: ${request.text}` }] } };
  };
  return Object.assign(backend, { release });
}
