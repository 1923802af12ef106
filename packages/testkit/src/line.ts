import { postWebhook } from './post-webhook.js';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually } from './eventually.js';
import { readJsonBody } from './json-body.js';

/**
 * A fake LINE Messaging API for tests: a node:http server on 127.0.0.1 that answers
 * `POST /v2/bot/message/reply`, `POST /v2/bot/message/push` and `GET /v2/bot/info` like
 * api.line.me does (configure
 * its `url` as the channel's `api_url`). It checks the Bearer channel access token (401), the
 * message array (1 to 5 messages: texts of at most 5000 characters, images whose
 * `originalContentUrl` and `previewImageUrl` are HTTPS URLs of at most 2000 characters; else 400
 * naming the property),
 * the reply token (issued by `textEvent`, usable once and for `replyTokenTtlMs`, else 400 "Invalid
 * reply token") and `X-Line-Retry-Key` on push (a UUID; a key already accepted answers 409 with the
 * `x-line-accepted-request-id` of the request that was, and its `sentMessages`). Successes answer
 * `{ sentMessages: [{ id, quoteToken }] }` with an `x-line-request-id`. It records every call and
 * can answer 429 (the rate limit, or the monthly message quota), another status, hang, or accept
 * a push and then hang (a timeout after LINE took it: what retry keys are for). Webhooks are POSTed with `deliverWebhook`, signed as LINE signs
 * them: `x-line-signature` = base64 HMAC-SHA256 of the raw body with the channel secret.
 */

// biome-ignore lint/suspicious/noExplicitAny: Messaging API payloads are read freely by tests
type Json = Record<string, any>;

/** The endpoints the fake serves: sending a reply or a push, and the bot's own info. */
export type LineEndpoint = 'reply' | 'push' | 'info';

/** Where a LINE message came from and where a push goes: a user, a group or a room. */
export type LineSource =
  | { type: 'user'; userId: string }
  | { type: 'group'; groupId: string; userId?: string }
  | { type: 'room'; roomId: string; userId?: string };

/** One API call, whatever it answered. */
export interface LineApiCall {
  endpoint: LineEndpoint | 'unknown';
  /** The Bearer token of the Authorization header. */
  token: string | undefined;
  /** `X-Line-Retry-Key`, when sent. */
  retryKey: string | undefined;
  body: Json;
  /** The HTTP status answered; `null` while pending or when it hung. */
  status: number | null;
  /** Milliseconds since the epoch at which it arrived. */
  at: number;
}

/** A message the fake accepted, by reply or push. */
export interface SentLineMessage {
  via: LineEndpoint;
  /** The user, group or room id it went to. */
  to: string;
  type: 'text' | 'image';
  /** A text message's text. */
  text?: string;
  /** An image message's URLs. */
  originalContentUrl?: string;
  previewImageUrl?: string;
  /** Its message id in `sentMessages`. */
  id: string;
}

/** What the next calls of an endpoint answer instead of succeeding (see `failNext`). */
export type FakeLineFailure =
  /**
   * 429, as LINE answers past its rate limit. LINE documents no Retry-After; `retryAfterSec` adds
   * one, as a proxy in front of it may.
   */
  | { kind: 'rate_limited'; retryAfterSec?: number }
  /** 429 too, but for a push past the account's monthly message quota: waiting does not pass it. */
  | { kind: 'monthly_limit' }
  | { kind: 'http_status'; status: number; message?: string }
  /** Never answers (until `close`); nothing is sent. */
  | { kind: 'hang' }
  /** Sends the messages (and remembers a retry key) but never answers, as a timeout after acceptance. */
  | { kind: 'accept_then_hang' };

export interface FakeLineOptions {
  /** Signs webhooks. Default: `fake-line-channel-secret`. */
  channelSecret?: string;
  /** The Bearer token the API accepts. Default: `fake-line-access-token`. */
  channelAccessToken?: string;
  /** The bot's user id: webhooks' `destination`, and `isSelf` mentions. Default: `Ub0b0…`. */
  botUserId?: string;
  /** The bot's display name in `GET /v2/bot/info`. Default: `Switchboard`. */
  botName?: string;
  /** How long an issued reply token can be used. Default: 60 s (LINE: within one minute). */
  replyTokenTtlMs?: number;
}

/** What a webhook POST got back. */
export interface LineWebhookAnswer {
  status: number;
  headers: Headers;
  /** Parsed JSON, the text when it is not JSON, `null` when empty. */
  body: unknown;
}

/** Fields of a text message event that `textEvent` fills in when left out. */
export interface TextEventFields {
  text: string;
  /** Default: a one-to-one chat with `U0001…`. */
  source?: LineSource;
  /** Mentionees: `self` mentions the bot (`isSelf: true`); an id mentions that user. */
  mentions?: Array<{ self: true } | { userId: string }>;
  /** `standby` when another channel owns the chat (module channels). Default: `active`. */
  mode?: 'active' | 'standby';
  /** Overrides or adds fields of the event. */
  extra?: Json;
}

export interface FakeLine {
  /** The API base to configure as `api_url` (`http://127.0.0.1:<port>`). */
  url: string;
  channelSecret: string;
  channelAccessToken: string;
  botUserId: string;
  /** Every API call, in arrival order. */
  calls: LineApiCall[];
  /** The calls of one endpoint. */
  callsTo(endpoint: LineEndpoint): LineApiCall[];
  /** Every message accepted, texts and images, in order. */
  sent(): SentLineMessage[];
  /** The texts that reached one user, group or room, by reply or push, in order (images left out: see `sent`). */
  deliveredTo(to: string): string[];
  /** Resolves once `count` messages reached `to` (rejects after `timeoutMs`). */
  waitForDelivered(to: string, count: number, timeoutMs?: number): Promise<string[]>;
  /**
   * The next `count` calls of `endpoint` answer `failure`; with `after`, that many calls of it are
   * answered as usual first (`failNext('push', 1, failure, { after: 1 })` fails the second push).
   */
  failNext(
    endpoint: LineEndpoint,
    count: number,
    failure: FakeLineFailure,
    options?: { after?: number },
  ): void;
  /** Reply tokens issued so far stop working, as when a minute has passed. */
  expireReplyTokens(): void;
  /**
   * A text message event as LINE sends it: `webhookEventId`, `timestamp`, `mode`,
   * `deliveryContext`, a message id and a reply token the fake will accept once.
   */
  textEvent(fields: TextEventFields): Json;
  /** The same event as LINE redelivers it: same `webhookEventId`, `deliveryContext.isRedelivery` true. */
  redelivery(event: Json): Json;
  /**
   * POSTs `{ destination, events }` (or a raw string body) to `url`, signed with the channel
   * secret; `signature` overrides the header (`null` leaves it out).
   */
  deliverWebhook(
    url: string,
    events: Json[] | string,
    options?: { signature?: string | null },
  ): Promise<LineWebhookAnswer>;
  /**
   * The content of an image, video, audio or file message `messageId`, served (to the channel
   * access token only) at `GET /v2/bot/message/{messageId}/content`, as the data API host does.
   */
  addContent(messageId: string, content: Buffer, contentType: string): void;
  close(): Promise<void>;
}

const ENDPOINTS: Record<string, LineEndpoint> = {
  'POST /v2/bot/message/reply': 'reply',
  'POST /v2/bot/message/push': 'push',
  'GET /v2/bot/info': 'info',
};
const TEXT_LIMIT = 5000;
const URL_LIMIT = 2000;
const MESSAGES_PER_CALL = 5;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface Answer {
  status: number;
  body: Json;
  headers?: Record<string, string>;
}

const error = (status: number, message: string, details?: Json[]): Answer => ({
  status,
  body: { message, ...(details === undefined ? {} : { details }) },
});

/** base64 HMAC-SHA256 of `body` with `channelSecret`: LINE's `x-line-signature`. */
export function signLineBody(channelSecret: string, body: string): string {
  return createHmac('sha256', channelSecret).update(body).digest('base64');
}

function idOf(source: LineSource): string {
  if (source.type === 'group') return source.groupId;
  return source.type === 'room' ? source.roomId : source.userId;
}

/** 400 naming the first bad message, as LINE does; `null` when the array is good. */
function badMessages(messages: unknown): Answer | null {
  if (!Array.isArray(messages) || messages.length === 0)
    return error(400, 'The request body has 1 error(s)', [
      { message: 'must be specified', property: 'messages' },
    ]);
  if (messages.length > MESSAGES_PER_CALL) {
    return error(400, 'The request body has 1 error(s)', [
      { message: `Size must be between 1 and ${MESSAGES_PER_CALL}`, property: 'messages' },
    ]);
  }
  for (const [index, message] of messages.entries()) {
    if (message?.type === 'image') {
      const bad = badImage(message, `messages[${index}]`);
      if (bad !== null) return bad;
      continue;
    }
    if (message?.type !== 'text' || typeof message.text !== 'string' || message.text === '') {
      return error(400, 'The request body has 1 error(s)', [
        { message: 'must be a non-empty text or an image message', property: `messages[${index}]` },
      ]);
    }
    if ([...message.text].length > TEXT_LIMIT) {
      return error(400, 'The request body has 1 error(s)', [
        { message: `Length must be between 0 and ${TEXT_LIMIT}`, property: `messages[${index}].text` },
      ]);
    }
  }
  return null;
}

/** 400 naming the first bad URL of an image message (LINE fetches both itself: HTTPS only). */
function badImage(message: Json, at: string): Answer | null {
  for (const field of ['originalContentUrl', 'previewImageUrl']) {
    const value = message[field];
    const problem =
      typeof value !== 'string' || value === ''
        ? 'must be specified'
        : value.length > URL_LIMIT
          ? `Length must be between 0 and ${URL_LIMIT}`
          : !value.startsWith('https://')
            ? 'must be https'
            : null;
    if (problem !== null)
      return error(400, 'The request body has 1 error(s)', [
        { message: problem, property: `${at}.${field}` },
      ]);
  }
  return null;
}

/** Starts the fake on 127.0.0.1, port 0. */
export async function startFakeLine(options: FakeLineOptions = {}): Promise<FakeLine> {
  const channelSecret = options.channelSecret ?? 'fake-line-channel-secret';
  const channelAccessToken = options.channelAccessToken ?? 'fake-line-access-token';
  const botUserId = options.botUserId ?? `U${'b0'.repeat(16)}`;
  const botName = options.botName ?? 'Switchboard';
  const replyTokenTtlMs = options.replyTokenTtlMs ?? 60_000;
  const calls: LineApiCall[] = [];
  const sent: SentLineMessage[] = [];
  const failures = new Map<LineEndpoint, (FakeLineFailure | null)[]>();
  const hung = new Set<ServerResponse>();
  /** Issued reply tokens: where they answer and until when. Used ones are deleted. */
  const replyTokens = new Map<string, { to: string; expiresAt: number }>();
  /** Accepted retry keys: the request id and sent messages of the request that carried each. */
  const retryKeys = new Map<string, { requestId: string; sentMessages: Json[] }>();
  let nextMessageId = 500_000_000_000_000;

  /** Records the messages as sent to `to`; returns `sentMessages`. */
  function deliver(via: LineEndpoint, to: string, messages: Json[]): Json[] {
    return messages.map((message) => {
      const id = String(nextMessageId++);
      sent.push(
        message.type === 'image'
          ? {
              via,
              to,
              type: 'image',
              originalContentUrl: message.originalContentUrl,
              previewImageUrl: message.previewImageUrl,
              id,
            }
          : { via, to, type: 'text', text: message.text, id },
      );
      return { id, quoteToken: randomBytes(12).toString('base64url') };
    });
  }

  /** Checks a call and, when it succeeds, sends its messages. */
  function accept(
    endpoint: LineEndpoint | 'unknown',
    body: Json | null,
    retryKey: string | undefined,
  ): Answer {
    if (endpoint === 'unknown') return error(404, 'Not found');
    if (endpoint === 'info') {
      return {
        status: 200,
        body: {
          userId: botUserId,
          basicId: '@switchboard',
          displayName: botName,
          chatMode: 'bot',
          markAsReadMode: 'auto',
        },
      };
    }
    if (body === null) return error(400, 'The request body could not be parsed as JSON');
    const bad = badMessages(body.messages);
    if (bad !== null) return bad;
    if (endpoint === 'reply') {
      // Only the sending APIs that can be retried take a retry key.
      if (retryKey !== undefined) return error(400, "The retry key can't be used with this API");
      const token = replyTokens.get(String(body.replyToken));
      if (token === undefined || token.expiresAt <= Date.now()) return error(400, 'Invalid reply token');
      replyTokens.delete(String(body.replyToken));
      return { status: 200, body: { sentMessages: deliver('reply', token.to, body.messages) } };
    }
    if (typeof body.to !== 'string' || body.to === '')
      return error(400, 'The request body has 1 error(s)', [
        { message: 'must be specified', property: 'to' },
      ]);
    if (retryKey !== undefined && !UUID.test(retryKey))
      return error(400, "The value for the 'X-Line-Retry-Key' header is invalid");
    const earlier = retryKey === undefined ? undefined : retryKeys.get(retryKey);
    if (earlier !== undefined) {
      return {
        status: 409,
        body: { message: 'The retry key is already accepted', sentMessages: earlier.sentMessages },
        headers: { 'x-line-accepted-request-id': earlier.requestId },
      };
    }
    return { status: 200, body: { sentMessages: deliver('push', body.to, body.messages) } };
  }

  function nextFailure(endpoint: LineEndpoint | 'unknown'): FakeLineFailure | undefined {
    if (endpoint === 'unknown') return undefined;
    return failures.get(endpoint)?.shift() ?? undefined;
  }

  const contents = new Map<string, { content: Buffer; contentType: string }>();

  const server: Server = createServer(async (request, response) => {
    const at = Date.now();
    const contentPath = /^\/v2\/bot\/message\/([^/]+)\/content$/.exec(request.url ?? '');
    if (request.method === 'GET' && contentPath !== null) {
      const stored = contents.get(decodeURIComponent(contentPath[1] as string));
      const status =
        request.headers.authorization !== `Bearer ${channelAccessToken}`
          ? 401
          : stored === undefined
            ? 404
            : 200;
      if (status !== 200 || stored === undefined) {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ message: status === 401 ? 'Authentication failed' : 'Not found' }));
        return;
      }
      response.writeHead(200, {
        'content-type': stored.contentType,
        'content-length': String(stored.content.length),
      });
      response.end(stored.content);
      return;
    }
    const body = await readJsonBody(request);
    const path = new URL(request.url ?? '/', 'http://fake').pathname;
    const endpoint = ENDPOINTS[`${request.method} ${path}`] ?? 'unknown';
    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    const retryKeyHeader = request.headers['x-line-retry-key'];
    const retryKey = Array.isArray(retryKeyHeader) ? retryKeyHeader[0] : retryKeyHeader;
    const call: LineApiCall = { endpoint, token, retryKey, body: body ?? {}, status: null, at };
    calls.push(call);
    const requestId = randomUUID();
    const send = (answer: Answer) => {
      call.status = answer.status;
      if (answer.status === 200 && retryKey !== undefined && endpoint === 'push')
        retryKeys.set(retryKey, { requestId, sentMessages: answer.body.sentMessages });
      if (response.destroyed) return;
      response.writeHead(answer.status, {
        'content-type': 'application/json',
        'x-line-request-id': requestId,
        ...answer.headers,
      });
      response.end(JSON.stringify(answer.body));
    };
    if (token !== channelAccessToken) {
      return send(
        error(
          401,
          'Authentication failed. Confirm that the access token in the authorization header is valid.',
        ),
      );
    }
    const failure = nextFailure(endpoint);
    if (failure?.kind === 'hang') {
      hung.add(response);
      return;
    }
    if (failure?.kind === 'accept_then_hang') {
      const answer = accept(endpoint, body, retryKey);
      if (answer.status === 200 && retryKey !== undefined)
        retryKeys.set(retryKey, { requestId, sentMessages: answer.body.sentMessages });
      hung.add(response);
      return;
    }
    if (failure?.kind === 'rate_limited') {
      const { retryAfterSec } = failure;
      return send({
        ...error(429, 'The API rate limit has been exceeded. Try again later.'),
        ...(retryAfterSec === undefined ? {} : { headers: { 'retry-after': String(retryAfterSec) } }),
      });
    }
    if (failure?.kind === 'monthly_limit') return send(error(429, 'You have reached your monthly limit.'));
    if (failure?.kind === 'http_status')
      return send(error(failure.status, failure.message ?? 'Internal server error'));
    send(accept(endpoint, body, retryKey));
  });
  server.keepAliveTimeout = 1;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const deliveredTo = (to: string) =>
    sent.filter((entry) => entry.to === to && entry.type === 'text').map((entry) => entry.text as string);

  return {
    url,
    channelSecret,
    channelAccessToken,
    botUserId,
    calls,
    callsTo: (endpoint) => calls.filter((call) => call.endpoint === endpoint),
    sent: () => [...sent],
    deliveredTo,
    waitForDelivered(to, count, timeoutMs = 10_000) {
      return eventually(
        () => {
          const texts = deliveredTo(to);
          return texts.length >= count && texts;
        },
        timeoutMs,
        `fake line: ${count} message(s) delivered to ${to}`,
      );
    },
    failNext(endpoint, count, failure, { after = 0 } = {}) {
      failures.set(endpoint, [
        ...(failures.get(endpoint) ?? []),
        ...Array<null>(after).fill(null),
        ...Array<FakeLineFailure>(count).fill(failure),
      ]);
    },
    expireReplyTokens() {
      for (const token of replyTokens.values()) token.expiresAt = 0;
    },
    textEvent({ text, source = { type: 'user', userId: `U${'01'.repeat(16)}` }, mentions, mode, extra }) {
      const replyToken = randomBytes(16).toString('hex');
      replyTokens.set(replyToken, { to: idOf(source), expiresAt: Date.now() + replyTokenTtlMs });
      const mentionees = (mentions ?? []).map((mention, index) =>
        'self' in mention
          ? { index: index * 5, length: 4, type: 'user', userId: botUserId, isSelf: true }
          : { index: index * 5, length: 4, type: 'user', userId: mention.userId, isSelf: false },
      );
      return {
        type: 'message',
        message: {
          type: 'text',
          id: String(nextMessageId++),
          quoteToken: randomBytes(12).toString('base64url'),
          text,
          ...(mentionees.length === 0 ? {} : { mention: { mentionees } }),
        },
        webhookEventId: `01${randomBytes(12).toString('hex').toUpperCase()}`,
        deliveryContext: { isRedelivery: false },
        timestamp: Date.now(),
        source,
        replyToken,
        mode: mode ?? 'active',
        ...extra,
      };
    },
    redelivery: (event) => ({ ...event, deliveryContext: { isRedelivery: true } }),
    async deliverWebhook(target, events, deliverOptions = {}) {
      const raw = typeof events === 'string' ? events : JSON.stringify({ destination: botUserId, events });
      const signature =
        deliverOptions.signature === undefined ? signLineBody(channelSecret, raw) : deliverOptions.signature;
      return postWebhook(target, raw, {
        'content-type': 'application/json; charset=utf-8',
        'user-agent': 'LineBotWebhook/2.0',
        ...(signature === null ? {} : { 'x-line-signature': signature }),
      });
    },
    addContent(messageId, content, contentType) {
      contents.set(messageId, { content, contentType });
    },
    close() {
      for (const response of hung) response.destroy();
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
