import { type IncomingHttpHeaders, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake OpenAI-compatible chat-completions endpoint for tests: `POST /v1/chat/completions` on
 * node:http, 127.0.0.1, answering a plain completion, or with `stream: true` in the request, a
 * server-sent event stream of `chat.completion.chunk`s — one per token, `spacingMs` apart — then
 * a chunk with `finish_reason` and `data: [DONE]`, as api.openai.com does. The answer is set per
 * fake (`answerWith`); `breakAfter` cuts the connection mid-stream.
 */

// biome-ignore lint/suspicious/noExplicitAny: request bodies are read freely by tests
type Json = Record<string, any>;

/** What the endpoint answers. */
export interface FakeOpenAIAnswer {
  /** The answer's pieces; the whole answer is their concatenation. Default: `['Hello', ' world']`. */
  tokens?: readonly string[];
  /** Time between two streamed chunks, ms (token i is due i × spacingMs after the first). Default: 0. */
  spacingMs?: number;
  /** Streams this many tokens, then destroys the connection without a finish chunk. */
  breakAfter?: number;
  /** Time between `data: [DONE]` and the end of the body, ms (a server that ends it in a write of its own). Default: 0. */
  endDelayMs?: number;
  /** Answers this status with an OpenAI error body instead. */
  status?: number;
}

/** One request the endpoint received. */
export interface RecordedOpenAIRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: Json;
  /** Milliseconds since the epoch at which it arrived. */
  at: number;
}

export interface FakeOpenAI {
  /** The `base_url` to configure (`http://127.0.0.1:<port>/v1`). */
  baseUrl: string;
  requests: RecordedOpenAIRequest[];
  /** TCP connections accepted so far: a client that keeps its connection alive opens one. */
  connections(): number;
  /** Answers whose last byte was handed to the socket so far. */
  finished(): number;
  /** What the next requests answer. */
  answerWith(answer: FakeOpenAIAnswer): void;
  close(): Promise<void>;
}

/** `count` tokens `token0 token1 …`, e.g. for a long streamed answer. */
export function numberedTokens(count: number): string[] {
  return Array.from({ length: count }, (_, index) => `token${index} `);
}

const DEFAULT_TOKENS = ['Hello', ' world'];
const MODEL_CREATED_S = 1_700_000_000;

function chunkOf(model: string, delta: Json, finishReason: string | null): string {
  const chunk = {
    id: 'chatcmpl-fake',
    object: 'chat.completion.chunk',
    created: MODEL_CREATED_S,
    model,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

async function streamAnswer(
  response: ServerResponse,
  model: string,
  answer: FakeOpenAIAnswer,
): Promise<void> {
  const tokens = answer.tokens ?? DEFAULT_TOKENS;
  response.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
  });
  response.write(chunkOf(model, { role: 'assistant', content: '' }, null));
  const startedAt = Date.now();
  for (const [index, token] of tokens.entries()) {
    if (answer.breakAfter !== undefined && index >= answer.breakAfter) {
      // A FIN in the middle of the chunked body: the client reads what came, then the cut. (A
      // reset could discard what it had not read yet.)
      response.socket?.end();
      return;
    }
    // Token i is due `i × spacingMs` after the first, so a late timer on a busy machine does not
    // stretch the whole answer.
    const dueInMs = startedAt + index * (answer.spacingMs ?? 0) - Date.now();
    if (dueInMs > 0) await new Promise((resolve) => setTimeout(resolve, dueInMs));
    if (response.destroyed) return;
    await new Promise((resolve) => response.write(chunkOf(model, { content: token }, null), resolve));
  }
  response.write(chunkOf(model, {}, 'stop'));
  if (answer.endDelayMs === undefined) {
    response.end('data: [DONE]\n\n');
    return;
  }
  response.write('data: [DONE]\n\n');
  await new Promise((resolve) => setTimeout(resolve, answer.endDelayMs));
  if (!response.destroyed) response.end();
}

function completionOf(model: string, answer: FakeOpenAIAnswer): Json {
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: MODEL_CREATED_S,
    model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: (answer.tokens ?? DEFAULT_TOKENS).join(''), refusal: null },
        finish_reason: 'stop',
      },
    ],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  };
}

/** Starts the fake on 127.0.0.1, port 0. */
export async function startFakeOpenAI(initial: FakeOpenAIAnswer = {}): Promise<FakeOpenAI> {
  const requests: RecordedOpenAIRequest[] = [];
  let answer = initial;
  const server: Server = createServer((request, response) => {
    response.on('finish', () => {
      finished += 1;
    });
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: Json = {};
      try {
        body = JSON.parse(raw) as Json;
      } catch {}
      const path = new URL(request.url ?? '/', 'http://fake').pathname;
      requests.push({ path, headers: request.headers, body, at: Date.now() });
      const json = (status: number, payload: unknown) => {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(payload));
      };
      if (request.method !== 'POST' || path !== '/v1/chat/completions')
        return json(404, { error: { message: 'not found', type: 'invalid_request_error' } });
      if (answer.status !== undefined)
        return json(answer.status, { error: { message: 'fake failure', type: 'server_error' } });
      const model = typeof body.model === 'string' ? body.model : 'gpt-fake';
      if (body.stream === true) void streamAnswer(response, model, answer);
      else json(200, completionOf(model, answer));
    });
  });
  let connections = 0;
  let finished = 0;
  server.on('connection', () => {
    connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    connections: () => connections,
    finished: () => finished,
    answerWith(next) {
      answer = next;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
