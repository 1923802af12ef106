import { connect } from 'node:net';

/**
 * HTTP/1.1 over a bare socket, so that a scenario can send what no client library lets through:
 * malformed request lines and headers, lone surrogates, raw bytes, huge targets. Every exchange
 * opens its own connection and asks the server to close it (`Connection: close`).
 */

/** One request: sent as UTF-8, except `Buffer` parts, which are sent byte for byte. */
export interface RawRequest {
  method: string;
  /** The request target: path and query, already percent-encoded as the test wants it. */
  target: string | Buffer;
  headers?: Array<[string, string | Buffer]>;
  body?: string | Buffer;
}

/** What the server answered; `status` 0 when it closed or timed out without a status line. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** No complete answer within the deadline. */
  timedOut: boolean;
  /** The socket failed (e.g. reset) before a complete answer. */
  error?: string;
}

const CRLF = '\r\n';

/** The bytes of `request`, with Host, Connection: close and, for a body, Content-Length added. */
export function requestBytes(request: RawRequest, host: string): Buffer {
  const body = request.body === undefined ? undefined : Buffer.from(request.body);
  const parts: Buffer[] = [
    Buffer.from(`${request.method} `),
    Buffer.from(request.target),
    Buffer.from(` HTTP/1.1${CRLF}`),
  ];
  const headers: Array<[string, string | Buffer]> = [
    ['host', host],
    ['connection', 'close'],
    ...(request.headers ?? []),
  ];
  if (body !== undefined) headers.push(['content-length', String(body.length)]);
  for (const [name, value] of headers)
    parts.push(Buffer.from(`${name}: `), Buffer.from(value), Buffer.from(CRLF));
  parts.push(Buffer.from(CRLF));
  if (body !== undefined) parts.push(body);
  return Buffer.concat(parts);
}

/** Splits a response into status, headers and body (de-chunked); null while it is incomplete. */
function parseAnswer(bytes: Buffer, closed: boolean, bodiless: boolean): Omit<RawAnswer, 'timedOut'> | null {
  const end = bytes.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [statusLine = '', ...lines] = bytes.subarray(0, end).toString('latin1').split(CRLF);
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const rest = bytes.subarray(end + 4);
  // An answer to HEAD has no body whatever its headers say; an event stream never ends: for
  // both, the status and headers are the answer.
  if (bodiless || status === 204 || status === 304) return { status, headers, body: '' };
  if (headers['content-type']?.startsWith('text/event-stream')) return { status, headers, body: '' };
  const length = headers['content-length'];
  if (length !== undefined) {
    if (rest.length < Number(length)) return null;
    return { status, headers, body: rest.subarray(0, Number(length)).toString('utf8') };
  }
  if (headers['transfer-encoding'] === 'chunked') {
    const chunks: Buffer[] = [];
    let at = 0;
    for (;;) {
      const lineEnd = rest.indexOf(CRLF, at);
      if (lineEnd < 0) return null;
      const size = Number.parseInt(rest.subarray(at, lineEnd).toString('latin1'), 16);
      if (size === 0) return { status, headers, body: Buffer.concat(chunks).toString('utf8') };
      if (rest.length < lineEnd + 2 + size) return null;
      chunks.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
      at = lineEnd + 2 + size + 2;
    }
  }
  return closed ? { status, headers, body: rest.toString('utf8') } : null;
}

/**
 * Sends `request` (or raw bytes) to `url`'s host and port and resolves the answer. Never
 * rejects: a reset or a timeout is part of the answer, for the scenario to judge.
 */
export function exchange(url: string, request: RawRequest | Buffer, timeoutMs = 10_000): Promise<RawAnswer> {
  const { hostname, port, host } = new URL(url);
  const bytes = Buffer.isBuffer(request) ? request : requestBytes(request, host);
  const bodiless = !Buffer.isBuffer(request) && request.method === 'HEAD';
  return new Promise((resolve) => {
    const received: Buffer[] = [];
    let settled = false;
    const socket = connect({ host: hostname, port: Number(port) });
    const finish = (answer: RawAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => {
      const partial = parseAnswer(Buffer.concat(received), true, bodiless);
      finish({
        status: partial?.status ?? 0,
        headers: partial?.headers ?? {},
        body: partial?.body ?? '',
        timedOut: true,
      });
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      received.push(chunk);
      const answer = parseAnswer(Buffer.concat(received), false, bodiless);
      if (answer !== null) finish({ ...answer, timedOut: false });
    });
    socket.on('end', () => {
      const answer = parseAnswer(Buffer.concat(received), true, bodiless);
      finish(
        answer === null
          ? { status: 0, headers: {}, body: '', timedOut: false }
          : { ...answer, timedOut: false },
      );
    });
    socket.on('error', (error) => {
      const answer = parseAnswer(Buffer.concat(received), true, bodiless);
      finish({ ...(answer ?? { status: 0, headers: {}, body: '' }), timedOut: false, error: error.message });
    });
    socket.write(bytes);
  });
}
