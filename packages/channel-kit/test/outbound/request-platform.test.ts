import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually } from '@switchboard/testkit/eventually';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_ANSWER_BYTES, requestPlatform } from '../../src/outbound/request-platform.js';

const TOKEN = 'line-channel-access-token-value';
const where = { type: 'line', channelId: 'ln', call: 'POST /v2/bot/message/push' };

type Handler = (request: IncomingMessage, body: string, response: ServerResponse) => void;

interface FakePlatform {
  url: string;
  requests: { method?: string; url?: string; headers: IncomingMessage['headers']; body: string }[];
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A platform on 127.0.0.1 port 0 that records requests and answers with `handler`. */
async function fakePlatform(handler: Handler): Promise<FakePlatform> {
  const requests: FakePlatform['requests'] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on('end', () => {
      requests.push({ method: request.method, url: request.url, headers: request.headers, body });
      handler(request, body, response);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/v2/bot/message/push`, requests };
}

function answer(status: number, body: unknown, headers: Record<string, string> = {}): Handler {
  return (_request, _body, response) => {
    response.writeHead(status, { 'content-type': 'application/json', ...headers });
    response.end(JSON.stringify(body));
  };
}

function request(url: string, timeoutMs = 2_000, signal?: AbortSignal) {
  return requestPlatform({
    where,
    url,
    headers: { authorization: `Bearer ${TOKEN}` },
    body: { to: 'U1', messages: [{ type: 'text', text: 'hi' }] },
    timeoutMs,
    secrets: [TOKEN],
    credentialPath: 'channels[ln].token',
    ...(signal === undefined ? {} : { signal }),
  });
}

describe('requestPlatform', () => {
  describe('when the platform answers 200', () => {
    it('posts the JSON body with the headers and resolves with the parsed answer', async () => {
      const fake = await fakePlatform(answer(200, { sentMessages: [{ id: '1' }] }));
      expect(await request(fake.url)).toEqual({ sentMessages: [{ id: '1' }] });
      expect(fake.requests[0]).toMatchObject({
        method: 'POST',
        url: '/v2/bot/message/push',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      });
      expect(JSON.parse(fake.requests[0]?.body ?? '')).toEqual({
        to: 'U1',
        messages: [{ type: 'text', text: 'hi' }],
      });
    });
  });

  describe('when the call is a multipart upload', () => {
    it('posts the form as multipart/form-data, its boundary in the content type', async () => {
      const fake = await fakePlatform(answer(200, { id: '42' }));
      const form = new FormData();
      form.append('messaging_product', 'whatsapp');
      form.append('file', new Blob(['hello'], { type: 'text/plain' }), 'hello.txt');
      const answered = await requestPlatform({ where, url: fake.url, multipart: form, timeoutMs: 2_000 });
      expect(answered).toEqual({ id: '42' });
      const contentType = fake.requests[0]?.headers['content-type'] ?? '';
      const boundary = /boundary=(.+)$/.exec(contentType)?.[1];
      expect(contentType).toMatch(/^multipart\/form-data; boundary=/);
      expect(fake.requests[0]?.body).toContain(`--${boundary}`);
      expect(fake.requests[0]?.body).toContain(
        'filename="hello.txt"\r\nContent-Type: text/plain\r\n\r\nhello',
      );
    });
  });

  describe('when the platform answers 429 with Retry-After in seconds', () => {
    it('rejects with SB_CHANNEL_RATE_LIMITED and the wait in ms', async () => {
      const fake = await fakePlatform(answer(429, { message: 'Too many requests' }, { 'retry-after': '7' }));
      await expect(request(fake.url)).rejects.toMatchObject({
        code: 'SB_CHANNEL_RATE_LIMITED',
        retryable: true,
        retryAfterMs: 7_000,
        details: { status: 429, description: 'Too many requests' },
      });
    });
  });

  describe('when the platform answers 429 with Retry-After as an HTTP date', () => {
    it('rejects with the wait until that date', async () => {
      const at = new Date(Math.ceil(Date.now() / 1000) * 1000 + 30_000).toUTCString();
      const fake = await fakePlatform(answer(429, {}, { 'retry-after': at }));
      const error = await request(fake.url).catch((rejection: unknown) => rejection);
      expect(error).toMatchObject({ code: 'SB_CHANNEL_RATE_LIMITED' });
      const { retryAfterMs } = error as { retryAfterMs: number };
      expect(retryAfterMs).toBeGreaterThan(25_000);
      expect(retryAfterMs).toBeLessThanOrEqual(31_000);
    });
  });

  describe('when the platform answers 401', () => {
    it('rejects with SB_CHANNEL_AUTH_FAILED naming the credential and the platform message', async () => {
      const fake = await fakePlatform(
        answer(401, {
          message:
            'Authentication failed. Confirm that the access token in the authorization header is valid.',
        }),
      );
      const error = await request(fake.url).catch((rejection: unknown) => rejection);
      expect(error).toMatchObject({ code: 'SB_CHANNEL_AUTH_FAILED', retryable: false });
      expect((error as Error).message).toBe(
        'line channel "ln": POST /v2/bot/message/push failed: the platform refused the credentials (HTTP 401: Authentication failed. Confirm that the access token in the authorization header is valid.); check channels[ln].token',
      );
    });
  });

  describe('when the platform answers 500', () => {
    it('rejects with a retryable SB_CHANNEL_SEND_FAILED', async () => {
      const fake = await fakePlatform(answer(500, { error: { message: 'internal' } }));
      await expect(request(fake.url)).rejects.toMatchObject({
        code: 'SB_CHANNEL_SEND_FAILED',
        retryable: true,
        details: { status: 500, description: 'internal' },
      });
    });
  });

  describe('when the call is a form post', () => {
    it('sends the fields url-encoded, without the JSON content type', async () => {
      const fake = await fakePlatform(answer(200, { access_token: 'a' }));
      const token = await requestPlatform({
        where,
        url: fake.url,
        form: { grant_type: 'client_credentials', scope: 'https://x/.default' },
        timeoutMs: 2_000,
      });
      expect(token).toEqual({ access_token: 'a' });
      expect(fake.requests[0]?.headers['content-type']).toBe(
        'application/x-www-form-urlencoded;charset=UTF-8',
      );
      expect(Object.fromEntries(new URLSearchParams(fake.requests[0]?.body))).toEqual({
        grant_type: 'client_credentials',
        scope: 'https://x/.default',
      });
    });
  });

  describe('when the platform answers 400 with a body that is not JSON', () => {
    it('rejects with a final SB_CHANNEL_SEND_FAILED naming the status', async () => {
      const fake = await fakePlatform((_request, _body, response) => {
        response.writeHead(400, { 'content-type': 'text/html' });
        response.end('<html>bad</html>');
      });
      const error = await request(fake.url).catch((rejection: unknown) => rejection);
      expect(error).toMatchObject({ code: 'SB_CHANNEL_SEND_FAILED', retryable: false });
      expect((error as Error).message).toBe('line channel "ln": POST /v2/bot/message/push failed (HTTP 400)');
    });
  });

  describe('when the platform does not answer within timeoutMs', () => {
    it('rejects with a retryable SB_CHANNEL_SEND_FAILED saying so', async () => {
      const fake = await fakePlatform(() => {});
      const error = await request(fake.url, 200).catch((rejection: unknown) => rejection);
      expect(error).toMatchObject({ code: 'SB_CHANNEL_SEND_FAILED', retryable: true });
      expect((error as Error).message).toBe(
        'line channel "ln": POST /v2/bot/message/push failed: network error (no answer within 200 ms)',
      );
      expect(fake.requests).toHaveLength(1);
    });
  });

  describe('when the answer starts in time but its body does not end within timeoutMs', () => {
    it('rejects with a retryable SB_CHANNEL_SEND_FAILED saying so', async () => {
      const fake = await fakePlatform((_request, _body, response) => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.write('{"sentMessages": [');
      });
      const error = await request(fake.url, 200).catch((rejection: unknown) => rejection);
      expect(error).toMatchObject({ code: 'SB_CHANNEL_SEND_FAILED', retryable: true });
      expect((error as Error).message).toContain('no answer within 200 ms');
    });
  });

  describe('when the answer is larger than MAX_ANSWER_BYTES', () => {
    /** Writes `{"x":"xxx…` without end, as fast as the client reads, until it hangs up. */
    const endless: Handler = (_request, _body, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      const chunk = 'x'.repeat(64 * 1024);
      const pump = () => {
        while (!response.destroyed && response.write(chunk)) {}
        if (!response.destroyed) response.once('drain', pump);
      };
      response.write('{"x":"');
      pump();
    };

    it('stops reading at the limit and rejects with a final SB_CHANNEL_SEND_FAILED naming it', async () => {
      const fake = await fakePlatform(endless);
      const error = await request(fake.url, 10_000).catch((rejection: unknown) => rejection);
      expect(error).toMatchObject({ code: 'SB_CHANNEL_SEND_FAILED', retryable: false });
      expect((error as Error).message).toBe(
        `line channel "ln": POST /v2/bot/message/push failed (HTTP 200: the answer is larger than ${MAX_ANSWER_BYTES} bytes)`,
      );
    });

    it('still maps an error status by its status and Retry-After', async () => {
      const fake = await fakePlatform((_request, _body, response) => {
        response.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' });
        response.end(`{"message":"${'x'.repeat(MAX_ANSWER_BYTES)}"}`);
      });
      const error = await request(fake.url, 10_000).catch((rejection: unknown) => rejection);
      expect(error).toMatchObject({ code: 'SB_CHANNEL_RATE_LIMITED', retryable: true, retryAfterMs: 7_000 });
    });
  });

  describe("when the caller's signal aborts first", () => {
    it('rejects with its reason', async () => {
      const fake = await fakePlatform(() => {});
      const deadline = new AbortController();
      const reason = new Error('send deadline');
      const pending = request(fake.url, 10_000, deadline.signal);
      await eventually(() => fake.requests.length === 1);
      deadline.abort(reason);
      await expect(pending).rejects.toBe(reason);
    });
  });

  describe('when the connection is refused', () => {
    it('rejects with a retryable SB_CHANNEL_SEND_FAILED naming ECONNREFUSED', async () => {
      const fake = await fakePlatform(answer(200, {}));
      const closed = servers.pop() as Server;
      await new Promise((resolve) => closed.close(resolve));
      const error = await request(fake.url).catch((rejection: unknown) => rejection);
      expect(error).toMatchObject({
        code: 'SB_CHANNEL_SEND_FAILED',
        retryable: true,
        details: { network: 'ECONNREFUSED' },
      });
    });
  });

  describe('when the platform echoes the token', () => {
    it('masks it in the message and details', async () => {
      const fake = await fakePlatform((request, _body, response) => {
        response.writeHead(400, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ message: `bad header: ${request.headers.authorization}` }));
      });
      const error = (await request(fake.url).catch((rejection: unknown) => rejection)) as {
        message: string;
        details: unknown;
      };
      expect(error.message).toContain('bad header: Bearer ***');
      expect(JSON.stringify({ message: error.message, details: error.details })).not.toContain(TOKEN);
    });
  });
});
