import { postWebhook } from './post-webhook.js';
import { createHmac, randomUUID } from 'node:crypto';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';
import { eventually } from './eventually.js';
import { type FakeRateLimit, createFakeRateLimiter } from './fake-rate-limits.js';
import { multipartBoundary, parseMultipart } from './multipart-body.js';

// A fake Slack for tests: the Web API at `/api/<method>` (what Bolt's WebClient calls through
// `slackApiUrl`), a Socket Mode WebSocket at `/socket-mode`, and helpers that build and sign
// Events API requests the way Slack does. With `rateLimits` it enforces Slack's limits on posting
// and updating messages (`SLACK_RATE_LIMITS`): a call past one is answered HTTP 429 with Retry-After and counted.

/** Limits on posting and updating messages; a limit left out is not enforced. */
export interface FakeSlackRateLimits {
  /** Every post or update of the app. */
  perApp?: FakeRateLimit;
  /** Every post or update into one Slack channel. */
  perChannel?: FakeRateLimit;
  /** See `fake-rate-limits.ts`. Default: `DEFAULT_TOLERANCE_MS`. */
  toleranceMs?: number;
}

/** Slack's documented chat.postMessage limit: 1 message a second per channel. */
export const SLACK_RATE_LIMITS: FakeSlackRateLimits = Object.freeze({
  perChannel: { limit: 1, perMs: 1000 },
});

/** The methods that post into a channel, and so count against the rate limits: posts and edits alike. */
const RATE_LIMITED_METHODS = new Set(['chat.postMessage', 'chat.update']);

/** One Web API call the fake received. */
export interface SlackApiCall {
  method: string;
  /** The bearer token (Authorization header, or the `token` form field). */
  token: string | undefined;
  /** Form fields or JSON body; Bolt's client sends forms, so every value is a string. */
  body: Record<string, unknown>;
  /** Milliseconds since the epoch at which it arrived. */
  at: number;
}

/** A `chat.update` the fake applied. */
export interface SlackEdit {
  channel: string;
  ts: string;
  text: string;
  /** Milliseconds since the epoch at which it arrived. */
  at: number;
}

/**
 * A file shared by files.completeUploadExternal: what files.getUploadURLExternal was told, the
 * bytes its upload URL received, and where it was shared.
 */
export interface SlackSharedFile {
  id: string;
  filename: string;
  title?: string;
  bytes: Buffer;
  channel: string;
  thread_ts?: string;
  /** Milliseconds since the epoch at which it was shared. */
  at: number;
}

/** How the next calls fail (see `failNext`). */
export type SlackFailure =
  | { kind: 'rate_limited'; retryAfterSec: number }
  | { kind: 'http_status'; status: number }
  | { kind: 'platform_error'; error: string }
  /** Never answers (until `close`). */
  | { kind: 'hang' };

export interface FakeSlackOptions {
  /** The token the Web API accepts; others get `invalid_auth`. Default: `xoxb-test`. */
  botToken?: string;
  /** The app-level token `apps.connections.open` accepts. Default: `xapp-test`. */
  appToken?: string;
  /** What `auth.test` answers. Defaults: `UBOT`, `BBOT`, `switchboard`, `T0001`. */
  botUserId?: string;
  botId?: string;
  botName?: string;
  teamId?: string;
  /** Limits enforced on the methods that post into a channel. Default: none. */
  rateLimits?: FakeSlackRateLimits;
}

export interface FakeSlack {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** The Web API base to configure as `api_url` (with the trailing slash Bolt needs). */
  apiUrl: string;
  /** Every Web API call, in arrival order (also the failed ones). */
  calls: SlackApiCall[];
  /** The calls of one method. */
  callsTo(method: string): SlackApiCall[];
  /** The `chat.update` calls that succeeded, in order. */
  edits(): SlackEdit[];
  /** The text a message the bot posted shows now (after its updates); undefined if unknown. */
  textOf(channel: string, ts: string): string | undefined;
  /** Resolves once `method` has been called `count` times (or rejects after `timeoutMs`). */
  waitForCalls(method: string, count: number, timeoutMs?: number): Promise<SlackApiCall[]>;
  /** The texts posted into one Slack channel (successful chat.postMessage calls), in order. */
  deliveredTo(channel: string): string[];
  /** Calls answered 429 for exceeding `rateLimits` (injected failures not included). */
  rateLimitViolations(): number;
  /** The next `count` Web API calls fail with `failure`. */
  failNext(count: number, failure: SlackFailure): void;
  /** The next `count` POSTs to an upload URL (files.getUploadURLExternal's) are answered `status`. */
  failNextUploads(count: number, status: number): void;
  /** The files shared into one Slack channel (files.completeUploadExternal), in order. */
  filesSharedTo(channel: string): SlackSharedFile[];
  /** Sends an `events_api` envelope to every Socket Mode connection; resolves with the envelope id once acked. */
  pushSocketEvent(
    body: Record<string, unknown>,
    options?: { retryAttempt?: number; timeoutMs?: number },
  ): Promise<string>;
  /** Sends an `events_api` envelope like `pushSocketEvent` without waiting for the ack; returns its id. */
  sendSocketEvent(body: Record<string, unknown>, options?: { retryAttempt?: number }): string;
  /** Whether a client has acknowledged the envelope. */
  acknowledged(envelopeId: string): boolean;
  /** Socket Mode connections currently open. */
  socketConnections(): number;
  /** The most Socket Mode connections ever open at once. */
  maxSocketConnections(): number;
  /** Cuts every Socket Mode connection, as a network failure would; clients reconnect. */
  dropSockets(): void;
  /**
   * A file shared in the workspace, as a message event's `files[]` lists it; its bytes are served
   * at `url_private_download` (and `url_private`) to `Authorization: Bearer <bot token>` only,
   * as Slack does (others get 403 here; Slack answers its login page).
   */
  addFile(content: Buffer, fields: { name: string; mimetype: string }): FakeSlackFile;
  /** Every GET of a file, with the Authorization header it carried. */
  fileRequests(): Array<{ path: string; authorization: string | undefined }>;
  close(): Promise<void>;
}

/** A Slack file object, as `files[]` of a message event carries it. */
export interface FakeSlackFile {
  id: string;
  name: string;
  mimetype: string;
  size: number;
  url_private: string;
  url_private_download: string;
}

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

function parseBody(raw: string, contentType: string | undefined): Record<string, unknown> {
  if (raw === '') return {};
  if (contentType?.startsWith('application/json')) return JSON.parse(raw) as Record<string, unknown>;
  return Object.fromEntries(new URLSearchParams(raw));
}

function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  response.end(JSON.stringify(body));
}

/** Starts the fake on 127.0.0.1 and a free port. */
export async function startFakeSlack(options: FakeSlackOptions = {}): Promise<FakeSlack> {
  const botToken = options.botToken ?? 'xoxb-test';
  const appToken = options.appToken ?? 'xapp-test';
  const identity = {
    user_id: options.botUserId ?? 'UBOT',
    bot_id: options.botId ?? 'BBOT',
    user: options.botName ?? 'switchboard',
    team_id: options.teamId ?? 'T0001',
  };
  const calls: SlackApiCall[] = [];
  const failures: SlackFailure[] = [];
  const hanging = new Set<ServerResponse>();
  const sockets = new Set<WebSocket>();
  let maxSockets = 0;
  const acks = new Set<string>();
  const edits: SlackEdit[] = [];
  /** The text of each message the bot posted, by `<channel>/<ts>`. */
  const texts = new Map<string, string>();
  let sequence = 0;
  let baseUrl = '';
  const delivered: Array<{ channel: string; text: string }> = [];
  /** Files between files.getUploadURLExternal and files.completeUploadExternal, by id. */
  const uploads = new Map<string, { filename: string; length: number; bytes?: Buffer }>();
  const shared: SlackSharedFile[] = [];
  const uploadFailures: number[] = [];
  const rateLimits = options.rateLimits ?? {};
  const limiter = createFakeRateLimiter(rateLimits.toleranceMs);

  /** Seconds to wait (Retry-After) when a post into the channel is past a limit, else null. */
  function overRateLimit(body: Record<string, unknown>, arrivedAt: number): number | null {
    const buckets: Array<readonly [string, FakeRateLimit]> = [];
    if (rateLimits.perApp !== undefined) buckets.push(['app', rateLimits.perApp]);
    if (rateLimits.perChannel !== undefined)
      buckets.push([`channel:${String(body.channel)}`, rateLimits.perChannel]);
    if (buckets.length === 0) return null;
    const waitMs = limiter.admit(buckets, arrivedAt);
    return waitMs === 0 ? null : Math.ceil(waitMs / 1000);
  }

  function answer(
    method: string,
    token: string | undefined,
    body: Record<string, unknown>,
  ): { status: number; body: unknown } {
    if (method === 'apps.connections.open') {
      return token === appToken
        ? { status: 200, body: { ok: true, url: `${baseUrl.replace('http', 'ws')}/socket-mode` } }
        : { status: 200, body: { ok: false, error: 'invalid_auth' } };
    }
    if (token !== botToken) return { status: 200, body: { ok: false, error: 'invalid_auth' } };
    switch (method) {
      case 'auth.test':
        return {
          status: 200,
          body: {
            ok: true,
            url: 'https://switchboard-test.slack.com/',
            team: 'Switchboard Test',
            ...identity,
          },
        };
      case 'chat.postMessage': {
        if (typeof body.channel !== 'string' || body.channel === '')
          return { status: 200, body: { ok: false, error: 'channel_not_found' } };
        if (typeof body.text !== 'string' || body.text === '')
          return { status: 200, body: { ok: false, error: 'no_text' } };
        sequence += 1;
        const ts = `${Math.floor(Date.now() / 1000)}.${String(sequence).padStart(6, '0')}`;
        const message = {
          type: 'message',
          user: identity.user_id,
          bot_id: identity.bot_id,
          text: body.text,
          ts,
          ...(body.thread_ts ? { thread_ts: body.thread_ts } : {}),
        };
        delivered.push({ channel: body.channel, text: body.text });
        texts.set(`${body.channel}/${ts}`, body.text);
        return { status: 200, body: { ok: true, channel: body.channel, ts, message } };
      }
      case 'chat.update': {
        const key = `${body.channel}/${body.ts}`;
        if (!texts.has(key)) return { status: 200, body: { ok: false, error: 'message_not_found' } };
        if (typeof body.text !== 'string' || body.text === '')
          return { status: 200, body: { ok: false, error: 'no_text' } };
        texts.set(key, body.text);
        edits.push({ channel: String(body.channel), ts: String(body.ts), text: body.text, at: Date.now() });
        return { status: 200, body: { ok: true, channel: body.channel, ts: body.ts, text: body.text } };
      }
      case 'files.getUploadURLExternal': {
        const length = Number(body.length);
        if (typeof body.filename !== 'string' || body.filename === '' || !(length > 0))
          return { status: 200, body: { ok: false, error: 'invalid_arguments' } };
        sequence += 1;
        const fileId = `F${String(sequence).padStart(8, '0')}`;
        uploads.set(fileId, { filename: body.filename, length });
        return {
          status: 200,
          body: { ok: true, upload_url: `${baseUrl}/upload/${fileId}`, file_id: fileId },
        };
      }
      case 'files.completeUploadExternal': {
        const files = JSON.parse(String(body.files ?? '[]')) as Array<{ id: string; title?: string }>;
        const channel = body.channel_id;
        if (typeof channel !== 'string' || channel === '')
          return { status: 200, body: { ok: false, error: 'channel_not_found' } };
        const complete = files.map((file) => ({ file, upload: uploads.get(file.id) }));
        if (complete.some(({ upload }) => upload?.bytes === undefined))
          return { status: 200, body: { ok: false, error: 'file_not_found' } };
        for (const { file, upload } of complete) {
          uploads.delete(file.id);
          shared.push({
            id: file.id,
            filename: upload?.filename ?? '',
            ...(file.title === undefined ? {} : { title: file.title }),
            bytes: upload?.bytes ?? Buffer.alloc(0),
            channel,
            ...(typeof body.thread_ts === 'string' ? { thread_ts: body.thread_ts } : {}),
            at: Date.now(),
          });
        }
        return { status: 200, body: { ok: true, files: files.map(({ id, title }) => ({ id, title })) } };
      }
      case 'assistant.threads.setStatus': {
        // Slack's reference: channel_id and thread_ts name the assistant thread; status may be empty (clears it).
        if (typeof body.channel_id !== 'string' || body.channel_id === '')
          return { status: 200, body: { ok: false, error: 'channel_not_found' } };
        if (typeof body.thread_ts !== 'string' || body.thread_ts === '' || typeof body.status !== 'string')
          return { status: 200, body: { ok: false, error: 'invalid_arguments' } };
        return { status: 200, body: { ok: true } };
      }
      default:
        return { status: 200, body: { ok: false, error: 'unknown_method' } };
    }
  }

  const files = new Map<string, Buffer>();
  const fileRequests: Array<{ path: string; authorization: string | undefined }> = [];

  function serveFile(request: IncomingMessage, response: ServerResponse): void {
    const path = request.url?.split('?')[0] ?? '';
    fileRequests.push({ path, authorization: request.headers.authorization });
    const content = files.get(path.replace(/\/download(?=\/)/, ''));
    if (content === undefined) {
      sendJson(response, 404, { ok: false, error: 'file_not_found' });
      return;
    }
    if (request.headers.authorization !== `Bearer ${botToken}`) {
      sendJson(response, 403, { ok: false, error: 'not_authed' });
      return;
    }
    response.writeHead(200, {
      'content-type': 'application/octet-stream',
      'content-length': String(content.length),
    });
    response.end(content);
  }

  /**
   * An upload URL: takes the file's bytes, raw or as a multipart form's file, and must get as
   * many as files.getUploadURLExternal was told (`length`), as Slack checks.
   */
  async function upload(fileId: string, request: IncomingMessage, response: ServerResponse): Promise<void> {
    const raw = await readBody(request);
    const status = uploadFailures.shift();
    if (status !== undefined) {
      response.writeHead(status).end('fake failure');
      return;
    }
    const pending = uploads.get(fileId);
    if (pending === undefined) {
      response.writeHead(404).end('not found');
      return;
    }
    const boundary = multipartBoundary(request.headers['content-type']);
    const bytes = boundary === undefined ? raw : Object.values(parseMultipart(raw, boundary).files)[0]?.bytes;
    if (bytes === undefined || bytes.length !== pending.length) {
      response.writeHead(400).end('length mismatch');
      return;
    }
    pending.bytes = bytes;
    response.writeHead(200, { 'content-type': 'text/plain' }).end(`OK - ${bytes.length}`);
  }

  const server = createServer(async (request, response) => {
    if (request.method === 'GET' && request.url?.startsWith('/files-pri/')) {
      serveFile(request, response);
      return;
    }
    // Read before the body: limits count a request when it reaches the server.
    const arrivedAt = Date.now();
    const uploadMatch = /^\/upload\/([A-Z0-9]+)$/.exec(request.url?.split('?')[0] ?? '');
    if (request.method === 'POST' && uploadMatch?.[1] !== undefined)
      return upload(uploadMatch[1], request, response);
    const match = /^\/api\/([A-Za-z.]+)$/.exec(request.url?.split('?')[0] ?? '');
    if (request.method !== 'POST' || match?.[1] === undefined) {
      sendJson(response, 404, { ok: false, error: 'not_found' });
      return;
    }
    const method = match[1];
    const body = parseBody((await readBody(request)).toString('utf8'), request.headers['content-type']);
    const bearer = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    const token = bearer ?? (typeof body.token === 'string' ? body.token : undefined);
    calls.push({ method, token, body, at: arrivedAt });

    const failure = failures.shift();
    if (failure?.kind === 'hang') {
      hanging.add(response);
      return;
    }
    if (failure?.kind === 'rate_limited') {
      sendJson(
        response,
        429,
        { ok: false, error: 'ratelimited' },
        { 'retry-after': String(failure.retryAfterSec) },
      );
      return;
    }
    if (failure?.kind === 'http_status') {
      sendJson(response, failure.status, { ok: false, error: 'fake_failure' });
      return;
    }
    if (failure?.kind === 'platform_error') {
      sendJson(response, 200, { ok: false, error: failure.error });
      return;
    }
    const retryAfterSec = RATE_LIMITED_METHODS.has(method) ? overRateLimit(body, arrivedAt) : null;
    if (retryAfterSec !== null) {
      sendJson(response, 429, { ok: false, error: 'ratelimited' }, { 'retry-after': String(retryAfterSec) });
      return;
    }
    const result = answer(method, token, body);
    sendJson(response, result.status, result.body);
  });

  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (request, socket, head) => {
    if (request.url?.split('?')[0] !== '/socket-mode') {
      socket.destroy();
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      sockets.add(ws);
      maxSockets = Math.max(maxSockets, sockets.size);
      ws.on('close', () => sockets.delete(ws));
      ws.on('message', (data) => {
        const reply = JSON.parse(String(data)) as { envelope_id?: unknown };
        if (typeof reply.envelope_id === 'string') acks.add(reply.envelope_id);
      });
      ws.send(
        JSON.stringify({
          type: 'hello',
          num_connections: 1,
          connection_info: { app_id: 'A0001' },
          debug_info: { host: 'fake' },
        }),
      );
    });
  });

  function sendSocketEvent(body: Record<string, unknown>, sendOptions: { retryAttempt?: number } = {}) {
    const envelopeId = randomUUID();
    const envelope = {
      envelope_id: envelopeId,
      type: 'events_api',
      accepts_response_payload: false,
      retry_attempt: sendOptions.retryAttempt ?? 0,
      retry_reason: sendOptions.retryAttempt ? 'timeout' : '',
      payload: body,
    };
    for (const ws of sockets) ws.send(JSON.stringify(envelope));
    return envelopeId;
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: baseUrl,
    apiUrl: `${baseUrl}/api/`,
    calls,
    callsTo: (method) => calls.filter((call) => call.method === method),
    edits: () => [...edits],
    textOf: (channel, ts) => texts.get(`${channel}/${ts}`),
    waitForCalls(method, count, timeoutMs = 10_000) {
      return eventually(
        () => {
          const matching = calls.filter((call) => call.method === method);
          return matching.length >= count && matching;
        },
        timeoutMs,
        `fake slack: ${count} ${method} call(s)`,
      );
    },
    deliveredTo: (channel) =>
      delivered.filter((entry) => entry.channel === channel).map((entry) => entry.text),
    rateLimitViolations: () => limiter.violations(),
    failNextUploads(count, status) {
      uploadFailures.push(...Array<number>(count).fill(status));
    },
    filesSharedTo: (channel) => shared.filter((file) => file.channel === channel),
    failNext(count, failure) {
      for (let i = 0; i < count; i += 1) failures.push(failure);
    },
    sendSocketEvent,
    async pushSocketEvent(body, pushOptions = {}) {
      const envelopeId = sendSocketEvent(body, pushOptions);
      await eventually(
        () => acks.has(envelopeId),
        pushOptions.timeoutMs ?? 5_000,
        `fake slack: envelope ${envelopeId} acked`,
      );
      return envelopeId;
    },
    acknowledged: (envelopeId) => acks.has(envelopeId),
    socketConnections: () => sockets.size,
    maxSocketConnections: () => maxSockets,
    dropSockets() {
      for (const ws of sockets) ws.terminate();
    },
    addFile(content, fields) {
      const id = `F${String(files.size + 1).padStart(8, '0')}`;
      const path = `/files-pri/${identity.team_id}-${id}/${encodeURIComponent(fields.name)}`;
      files.set(path, content);
      return {
        id,
        ...fields,
        size: content.length,
        url_private: `${baseUrl}${path}`,
        url_private_download: `${baseUrl}/files-pri/${identity.team_id}-${id}/download/${encodeURIComponent(fields.name)}`,
      };
    },
    fileRequests: () => [...fileRequests],
    async close() {
      for (const response of hanging) response.destroy();
      for (const ws of sockets) ws.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** `v0=` + hex HMAC-SHA256(secret, `v0:<timestamp>:<body>`): Slack's `X-Slack-Signature`. */
export function signSlackRequest(signingSecret: string, body: string, timestampSec: number): string {
  return `v0=${createHmac('sha256', signingSecret).update(`v0:${timestampSec}:${body}`).digest('hex')}`;
}

let tsSequence = 0;

/** A message `ts` as Slack writes them (`<seconds>.<6 digits>`), unique within the process. */
export function nextSlackTs(): string {
  tsSequence += 1;
  return `${Math.floor(Date.now() / 1000)}.${String(tsSequence).padStart(6, '0')}`;
}

/** A `message` event as Slack sends it for a person's message; `fields` override or add. */
export function messageEvent(
  fields: { channel: string; text: string } & Record<string, unknown>,
): Record<string, unknown> {
  const ts = typeof fields.ts === 'string' ? fields.ts : nextSlackTs();
  return {
    type: 'message',
    user: 'U0001',
    client_msg_id: randomUUID(),
    ts,
    event_ts: ts,
    team: 'T0001',
    channel_type: fields.channel.startsWith('D') ? 'im' : 'channel',
    blocks: [
      {
        type: 'rich_text',
        block_id: 'b1',
        elements: [{ type: 'rich_text_section', elements: [{ type: 'text', text: fields.text }] }],
      },
    ],
    ...fields,
  };
}

/**
 * The `message_changed` event Slack sends when the person who wrote `original` (a `messageEvent`)
 * edits it to `text`: the event has a `ts` of its own, the message keeps its `ts` and gets `edited`.
 */
export function messageChangedEvent(
  original: Record<string, unknown>,
  text: string,
): Record<string, unknown> {
  const ts = nextSlackTs();
  const { event_ts: _eventTs, channel, channel_type, ...message } = original;
  return {
    type: 'message',
    subtype: 'message_changed',
    message: { ...message, text, edited: { user: original.user, ts } },
    previous_message: message,
    channel,
    hidden: true,
    ts,
    event_ts: ts,
    channel_type,
  };
}

/**
 * The `message_deleted` event Slack sends when `original` (a `messageEvent`) is deleted: an event
 * `ts` of its own, `deleted_ts` naming the message, and the message as it was in `previous_message`.
 */
export function messageDeletedEvent(original: Record<string, unknown>): Record<string, unknown> {
  const ts = nextSlackTs();
  const { event_ts: _eventTs, channel, channel_type, ...message } = original;
  return {
    type: 'message',
    subtype: 'message_deleted',
    hidden: true,
    deleted_ts: original.ts,
    previous_message: message,
    channel,
    ts,
    event_ts: ts,
    channel_type,
  };
}

/** A `reaction_added` (or `reaction_removed`) event of `user` on `original` (a `messageEvent`). */
export function reactionEvent(
  original: Record<string, unknown>,
  reaction: string,
  options: { user?: string; removed?: boolean } = {},
): Record<string, unknown> {
  return {
    type: options.removed ? 'reaction_removed' : 'reaction_added',
    user: options.user ?? 'U0001',
    reaction,
    item_user: original.user,
    item: { type: 'message', channel: original.channel, ts: original.ts },
    event_ts: nextSlackTs(),
  };
}

/** The `event_callback` envelope Slack POSTs around an event. */
export function eventEnvelope(
  event: Record<string, unknown>,
  options: { eventId?: string; teamId?: string } = {},
): Record<string, unknown> {
  const teamId = options.teamId ?? 'T0001';
  return {
    token: 'legacy-verification-token',
    team_id: teamId,
    context_team_id: teamId,
    api_app_id: 'A0001',
    event,
    type: 'event_callback',
    event_id: options.eventId ?? `Ev${randomUUID().replaceAll('-', '').slice(0, 10).toUpperCase()}`,
    event_time: Math.floor(Date.now() / 1000),
    authorizations: [
      { enterprise_id: null, team_id: teamId, user_id: 'UBOT', is_bot: true, is_enterprise_install: false },
    ],
    is_ext_shared_channel: false,
    event_context: `4-${randomUUID()}`,
  };
}

export interface SendEventOptions {
  signingSecret: string;
  /** Sets `X-Slack-Retry-Num` (and `X-Slack-Retry-Reason: http_timeout`), as Slack's redeliveries do. */
  retryNum?: number;
  /** Signs with a timestamp ten minutes old. */
  staleTimestamp?: boolean;
  /** Sends a signature made with another secret. */
  badSignature?: boolean;
  /** Default: `application/json`. */
  contentType?: string;
}

export interface SendEventAnswer {
  status: number;
  headers: Headers;
  /** Parsed JSON, the text when it is not JSON, `null` when empty. */
  body: unknown;
}

/**
 * Signs `body` (an object is sent as JSON; a string as is, e.g. to send malformed JSON) and POSTs
 * it to the channel's Events API route, `<gatewayUrl>/slack/<channelId>/events`.
 */
export async function sendEvent(
  gatewayUrl: string,
  channelId: string,
  body: Record<string, unknown> | string,
  options: SendEventOptions,
): Promise<SendEventAnswer> {
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  const timestampSec = Math.floor(Date.now() / 1000) - (options.staleTimestamp ? 600 : 0);
  const secret = options.badSignature ? `${options.signingSecret}-wrong` : options.signingSecret;
  const headers: Record<string, string> = {
    'content-type': options.contentType ?? 'application/json',
    'x-slack-request-timestamp': String(timestampSec),
    'x-slack-signature': signSlackRequest(secret, raw, timestampSec),
  };
  if (options.retryNum !== undefined) {
    headers['x-slack-retry-num'] = String(options.retryNum);
    headers['x-slack-retry-reason'] = 'http_timeout';
  }
  return postWebhook(`${gatewayUrl}/slack/${channelId}/events`, raw, headers);
}
