import { postWebhook } from './post-webhook.js';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually } from './eventually.js';
import { type FakeRateLimit, createFakeRateLimiter } from './fake-rate-limits.js';
import { readJsonBody } from './json-body.js';
import { type UploadedFile, multipartBoundary, parseMultipart, readRawBody } from './multipart-body.js';

/**
 * A fake WhatsApp Business Cloud API for tests: a node:http server on 127.0.0.1 that answers
 * `POST /{version}/{phone_number_id}/messages` like graph.facebook.com does (configure its `url`
 * as the channel's `api_url`). It checks the Bearer access token (401, Graph error code 190), the
 * phone number id and the text message (`messaging_product: whatsapp`, `to`, `type: text`,
 * `text.body` of 1 to 4096 characters, else 400 with code 100) and answers
 * `{ messaging_product, contacts: [{ input, wa_id }], messages: [{ id: "wamid…" }] }`; `GET
 * /{version}/{phone_number_id}` answers the number's `display_phone_number` and `verified_name`.
 * Media messages (`type: image | document | audio` with `{ link }` or the `{ id }` of an upload,
 * `document.filename`) are taken too, and `POST /{version}/{phone_number_id}/media` takes an upload
 * as Meta documents it (multipart: `messaging_product=whatsapp`, `type` = a mime type WhatsApp
 * accepts, the `file` part; else 400 code 100) and answers its `{ id }`. It records
 * every call and can answer a rate limit (130429, 131056 or 80007), a refused token, a send
 * outside the 24-hour window (131047), another status, or hang. With `rateLimits` it enforces the throughput and pair rate: a send past one is
 * answered 130429 (HTTP 429) or 131056 (HTTP 400, as Meta answers it) and counted. Webhook notifications are POSTed with `deliverWebhook`, signed as Meta signs
 * them: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body with the app secret>`;
 * `verifySubscription` performs the `GET` handshake Meta makes when the callback URL is saved.
 */

// biome-ignore lint/suspicious/noExplicitAny: Cloud API payloads are read freely by tests
type Json = Record<string, any>;

/** One Cloud API call, whatever it answered. */
export interface WhatsAppApiCall {
  method: string;
  path: string;
  /** The Bearer token of the Authorization header. */
  token: string | undefined;
  /** The JSON body, or the text fields of a multipart one. */
  body: Json;
  /** The file parts of a multipart body, by part name. */
  files?: Record<string, UploadedFile>;
  /** The HTTP status answered; `null` while pending or when it hung. */
  status: number | null;
  /** Milliseconds since the epoch at which it arrived. */
  at: number;
}

/** A message the fake accepted. */
export interface SentWhatsAppMessage {
  /** The recipient's WhatsApp id (phone number). */
  to: string;
  type: 'text' | WhatsAppMediaType;
  /** The body of a text message; `''` for a media message. */
  text: string;
  /** The part of a media message: `{ link }` or `{ id }` of an upload, `filename` of a document. */
  media?: { link?: string; id?: string; filename?: string; caption?: string };
  /** Its `wamid` in the answer. */
  id: string;
}

/** The kinds of media message the fake takes. */
export type WhatsAppMediaType = 'image' | 'document' | 'audio';

/** A file uploaded with `POST /{version}/{phone_number_id}/media`. */
export interface WhatsAppUpload {
  /** The media id answered. */
  id: string;
  /** The `type` field: the mime type given. */
  type: string;
  file: UploadedFile;
}

/**
 * The mime types the Cloud API takes per kind of media ("Supported media types" in Meta's
 * reference); a document may be of any of the listed office types, PDF or plain text.
 */
export const WHATSAPP_MEDIA_TYPES: Record<WhatsAppMediaType, readonly string[]> = {
  image: ['image/jpeg', 'image/png'],
  audio: ['audio/aac', 'audio/amr', 'audio/mpeg', 'audio/mp4', 'audio/ogg'],
  document: [
    'text/plain',
    'application/pdf',
    'application/msword',
    'application/vnd.ms-excel',
    'application/vnd.ms-powerpoint',
    'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
    'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  ],
};

/** What the next calls answer instead of succeeding (see `failNext`). */
export type FakeWhatsAppFailure =
  /** Graph's throughput (130429), pair rate (131056) or API call (80007) limit; HTTP 429 unless `status`. */
  | { kind: 'rate_limited'; code?: 130429 | 131056 | 80007; status?: number; retryAfterSec?: number }
  /** The access token expired or was revoked: HTTP 401, code 190. */
  | { kind: 'auth' }
  /** The user last wrote more than 24 hours ago: HTTP 400, code 131047 (Re-engagement message). */
  | { kind: 'outside_window' }
  | { kind: 'http_status'; status: number; code?: number; message?: string }
  /** Never answers (until `close`); nothing is sent. */
  | { kind: 'hang' };

/** Limits on sending; a limit left out is not enforced. */
export interface FakeWhatsAppRateLimits {
  /** Every message of the business number (throughput, 130429). */
  perNumber?: FakeRateLimit;
  /** Every message to one user (pair rate, 131056). */
  perRecipient?: FakeRateLimit;
  /** See `fake-rate-limits.ts`. Default: `DEFAULT_TOLERANCE_MS`. */
  toleranceMs?: number;
}

export interface FakeWhatsAppOptions {
  /** Signs webhooks. Default: `fake-whatsapp-app-secret`. */
  appSecret?: string;
  /** The Bearer token the API accepts. Default: `fake-whatsapp-access-token`. */
  accessToken?: string;
  /** The business phone number id the API serves. Default: `106540352242922`. */
  phoneNumberId?: string;
  /** The verify token `verifySubscription` presents. Default: `fake-whatsapp-verify-token`. */
  verifyToken?: string;
  /** Limits enforced on sends. Default: none. */
  rateLimits?: FakeWhatsAppRateLimits;
}

/** What a webhook call got back. */
export interface WhatsAppWebhookAnswer {
  status: number;
  headers: Headers;
  /** Parsed JSON, the text when it is not JSON, `null` when empty. */
  body: unknown;
}

/** Fields of an inbound message that `textMessage` fills in when left out. */
export interface TextMessageFields {
  text: string;
  /** The sender's WhatsApp id (phone number). Default: `16505551234`. */
  from?: string;
  /** The sender's profile name in `contacts[]`. Default: `Sheena Nelson`. */
  name?: string;
  /** Overrides or adds fields of the message object. */
  extra?: Json;
}

/** Fields of any kind of inbound message (`message`); `from` and `name` as in `TextMessageFields`. */
export interface MessageFields {
  /** `image`, `audio`, `document`, `location`, `interactive`, `video`… */
  type: string;
  /** The part under the key named by `type`: `{ id, caption }` of an image, `{ latitude, longitude }`… */
  part: Json;
  from?: string;
  name?: string;
  /** The wamid of the business's message it answers (a tapped reply button's message). */
  replyTo?: string;
}

/** One `value` of a `messages` change: messages with their contacts, or delivery statuses. */
export interface ChangeValue {
  contacts?: Json[];
  messages?: Json[];
  statuses?: Json[];
}

export interface FakeWhatsApp {
  /** The Graph API base to configure as `api_url` (`http://127.0.0.1:<port>`). */
  url: string;
  appSecret: string;
  accessToken: string;
  phoneNumberId: string;
  verifyToken: string;
  /** Every API call, in arrival order. */
  calls: WhatsAppApiCall[];
  /** Every message accepted, texts and media, in order. */
  sent(): SentWhatsAppMessage[];
  /** Every upload accepted, in order. */
  uploads(): WhatsAppUpload[];
  /** The texts that reached one recipient, in order (media messages left out). */
  deliveredTo(to: string): string[];
  /** Resolves once `count` messages reached `to` (rejects after `timeoutMs`). */
  waitForDelivered(to: string, count: number, timeoutMs?: number): Promise<string[]>;
  /** Sends answered a rate limit for exceeding `rateLimits` (injected failures not included). */
  rateLimitViolations(): number;
  /**
   * The next `count` calls answer `failure`; with `after`, only once that many calls more were
   * answered as usual (`failNext(1, failure, { after: 1 })` fails the second call from now).
   */
  failNext(count: number, failure: FakeWhatsAppFailure, options?: { after?: number }): void;
  /** The next `count` uploads (`POST …/media`) answer `failure`; other calls are answered as usual. */
  failNextUploads(count: number, failure: FakeWhatsAppFailure): void;
  /** A text message with its contact, as in `value.messages[]` and `value.contacts[]`. */
  textMessage(fields: TextMessageFields): ChangeValue;
  /** A message of any kind with its contact: media, a location, a tapped interactive reply. */
  message(fields: MessageFields): ChangeValue;
  /** A delivery status of a message the business sent (`sent`, `delivered`, `read`). */
  status(messageId: string, recipient: string, status?: 'sent' | 'delivered' | 'read'): ChangeValue;
  /** A notification (`object: whatsapp_business_account`) with one `messages` change per value. */
  notification(...values: ChangeValue[]): Json;
  /**
   * POSTs `body` (a notification, or a raw string) to `url`, signed with the app secret;
   * `signature` overrides the header (`null` leaves it out). Posting the same notification twice
   * is Meta's redelivery.
   */
  deliverWebhook(
    url: string,
    body: Json | string,
    options?: { signature?: string | null },
  ): Promise<WhatsAppWebhookAnswer>;
  /** Meta's `GET` verification request; answers the status and the text body. */
  verifySubscription(
    url: string,
    query?: { mode?: string; verifyToken?: string; challenge?: string },
  ): Promise<{ status: number; body: string }>;
  /**
   * A media object users sent: `GET /{version}/{id}` answers its `url`, `mime_type` and
   * `file_size`, and that URL serves the bytes — both to the access token only, as Meta does.
   * Returns the media id, for a message's `image.id`, `document.id`…
   */
  addMedia(content: Buffer, mimeType: string): string;
  close(): Promise<void>;
}

/** Meta's body limit of a text message, in characters. */
const TEXT_LIMIT = 4096;
const VERSION = /^v\d+\.\d+$/;

interface Answer {
  status: number;
  body: Json;
  headers?: Record<string, string>;
}

/** A Graph API error answer: `(#<code>) <title>` is how Graph words its messages. */
function graphError(status: number, code: number, message: string, type = 'OAuthException'): Answer {
  return {
    status,
    body: { error: { message, type, code, fbtrace_id: randomBytes(8).toString('base64url') } },
  };
}

const RATE_LIMITS = {
  130429: '(#130429) Rate limit hit',
  131056: '(#131056) (Business Account, Consumer Account) pair rate limit hit',
  80007: '(#80007) Rate limit issues',
} as const;

/** `sha256=<hex HMAC-SHA256 of body with appSecret>`: Meta's `X-Hub-Signature-256`. */
export function signWhatsAppBody(appSecret: string, body: string): string {
  return `sha256=${createHmac('sha256', appSecret).update(body).digest('hex')}`;
}

const invalid = (detail: string) => graphError(400, 100, `(#100) Invalid parameter: ${detail}`);

/**
 * 400 naming the first bad parameter of a media message's part, as Graph does; `null` when it is
 * good: exactly one of an `http(s)` `link` and the `id` of an upload.
 */
function badMedia(type: WhatsAppMediaType, part: Json | undefined, uploaded: (id: string) => boolean) {
  if (typeof part !== 'object' || part === null) return invalid(`${type} is required`);
  const { link, id } = part;
  if ((link === undefined) === (id === undefined)) return invalid(`${type}: give one of link and id`);
  if (link !== undefined && (typeof link !== 'string' || !/^https?:\/\//.test(link)))
    return invalid(`${type}.link must be an http or https URL`);
  if (id !== undefined && (typeof id !== 'string' || !uploaded(id)))
    return invalid(`${type}.id is not the id of an uploaded media`);
  return null;
}

/** 400 naming the first bad parameter of a message, as Graph does; `null` when it is good. */
function badMessage(body: Json | null, uploaded: (id: string) => boolean): Answer | null {
  if (body === null) return invalid('the body must be a JSON object');
  if (body.messaging_product !== 'whatsapp') return invalid('messaging_product must be whatsapp');
  if (typeof body.to !== 'string' || body.to === '') return invalid('to is required');
  if (body.type === 'image' || body.type === 'document' || body.type === 'audio')
    return badMedia(body.type, body[body.type], uploaded);
  if (body.type !== 'text') return invalid('type: the fake serves text, image, document and audio messages');
  const text: unknown = body.text?.body;
  if (typeof text !== 'string' || text.trim() === '') return invalid('text.body is required');
  if ([...text].length > TEXT_LIMIT) return invalid(`text.body is longer than ${TEXT_LIMIT} characters`);
  return null;
}

/** Starts the fake on 127.0.0.1, port 0. */
export async function startFakeWhatsApp(options: FakeWhatsAppOptions = {}): Promise<FakeWhatsApp> {
  const appSecret = options.appSecret ?? 'fake-whatsapp-app-secret';
  const accessToken = options.accessToken ?? 'fake-whatsapp-access-token';
  const phoneNumberId = options.phoneNumberId ?? '106540352242922';
  const verifyToken = options.verifyToken ?? 'fake-whatsapp-verify-token';
  const calls: WhatsAppApiCall[] = [];
  const sent: SentWhatsAppMessage[] = [];
  /** What the next calls answer, in order; `null` is a call answered as usual. */
  const failures: Array<FakeWhatsAppFailure | null> = [];
  /** What the next uploads answer, in order. */
  const uploadFailures: FakeWhatsAppFailure[] = [];
  const uploads: WhatsAppUpload[] = [];
  const hung = new Set<ServerResponse>();
  const rateLimits = options.rateLimits ?? {};
  const limiter = createFakeRateLimiter(rateLimits.toleranceMs);

  /** The rate-limit answer for a send to `to` past `rateLimits`, else null (and the send is counted). */
  function overRateLimit(to: string, arrivedAt: number): Answer | null {
    const buckets: Array<readonly [string, FakeRateLimit]> = [];
    if (rateLimits.perNumber !== undefined) buckets.push(['number', rateLimits.perNumber]);
    const recipient =
      rateLimits.perRecipient === undefined ? null : ([`to:${to}`, rateLimits.perRecipient] as const);
    if (recipient !== null) buckets.push(recipient);
    if (buckets.length === 0 || limiter.admit(buckets, arrivedAt) === 0) return null;
    const pairRate = recipient !== null && limiter.state(recipient, arrivedAt).remaining === 0;
    return failureAnswer({ kind: 'rate_limited', ...(pairRate ? { code: 131056, status: 400 } : {}) });
  }

  const wamid = () => `wamid.${randomBytes(24).toString('base64url')}`;

  function failureAnswer(failure: Exclude<FakeWhatsAppFailure, { kind: 'hang' }>): Answer {
    if (failure.kind === 'auth') {
      return graphError(
        401,
        190,
        'Error validating access token: Session has expired on Friday, 04-Dec-26 00:00:00 PST.',
      );
    }
    if (failure.kind === 'outside_window') {
      return graphError(400, 131047, '(#131047) Re-engagement message');
    }
    if (failure.kind === 'http_status') {
      return graphError(failure.status, failure.code ?? 1, failure.message ?? 'An unknown error occurred');
    }
    const code = failure.code ?? 130429;
    const answer = graphError(failure.status ?? 429, code, RATE_LIMITS[code]);
    return failure.retryAfterSec === undefined
      ? answer
      : { ...answer, headers: { 'retry-after': String(failure.retryAfterSec) } };
  }

  const media = new Map<string, { content: Buffer; mimeType: string }>();

  /** An upload of `POST /{version}/{phone_number_id}/media` as Meta checks it. */
  function upload(fields: Record<string, string>, files: Record<string, UploadedFile>): Answer {
    if (fields.messaging_product !== 'whatsapp')
      return graphError(400, 100, '(#100) The parameter messaging_product is required.');
    const type = fields.type ?? '';
    if (!Object.values(WHATSAPP_MEDIA_TYPES).some((types) => types.includes(type)))
      return graphError(400, 100, `(#100) Param type must be a supported mime type, got "${type}"`);
    const file = files.file;
    if (file === undefined || file.bytes.length === 0)
      return graphError(400, 100, '(#100) The parameter file is required.');
    const id = String(2_000_000_000_000_000 + uploads.length + 1);
    uploads.push({ id, type, file });
    media.set(id, { content: file.bytes, mimeType: type });
    return { status: 200, body: { id } };
  }

  function accept(
    method: string,
    path: string,
    body: Json | null,
    files: Record<string, UploadedFile> | undefined,
    arrivedAt: number,
  ): Answer {
    const parts = path.split('/');
    const [, version = '', phone, edge] = parts;
    const stored = method === 'GET' && parts.length === 3 ? media.get(phone ?? '') : undefined;
    if (stored !== undefined && VERSION.test(version)) {
      return {
        status: 200,
        body: {
          messaging_product: 'whatsapp',
          url: `${url}/media-download/${phone}`,
          mime_type: stored.mimeType,
          sha256: createHash('sha256').update(stored.content).digest('hex'),
          file_size: stored.content.length,
          id: phone,
        },
      };
    }
    if (method === 'GET' && parts.length === 3 && VERSION.test(version) && phone === phoneNumberId) {
      return {
        status: 200,
        body: { id: phoneNumberId, display_phone_number: '15550783881', verified_name: 'Switchboard Test' },
      };
    }
    const known = edge === 'messages' || edge === 'media';
    if (method !== 'POST' || parts.length !== 4 || !known || !VERSION.test(version))
      return graphError(400, 100, `Unknown path components: ${path}`);
    if (phone !== phoneNumberId) {
      return graphError(
        400,
        100,
        `Unsupported post request. Object with ID '${phone}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
        'GraphMethodException',
      );
    }
    if (edge === 'media') {
      if (files === undefined) return graphError(400, 100, '(#100) The request must be multipart/form-data');
      return upload(body ?? {}, files);
    }
    const bad = badMessage(body, (id) => uploads.some((entry) => entry.id === id));
    if (bad !== null || body === null) return bad ?? graphError(400, 100, '(#100) Invalid parameter');
    const limited = overRateLimit(body.to, arrivedAt);
    if (limited !== null) return limited;
    const id = wamid();
    sent.push(
      body.type === 'text'
        ? { to: body.to, type: 'text', text: body.text.body, id }
        : { to: body.to, type: body.type, text: '', media: body[body.type], id },
    );
    return {
      status: 200,
      body: {
        messaging_product: 'whatsapp',
        contacts: [{ input: body.to, wa_id: body.to }],
        messages: [{ id }],
      },
    };
  }

  let url = '';
  const server: Server = createServer(async (request, response) => {
    const at = Date.now();
    // Uploads come as multipart/form-data, every other call as JSON.
    const boundary = multipartBoundary(request.headers['content-type']);
    const multipart =
      boundary === undefined ? undefined : parseMultipart(await readRawBody(request), boundary);
    const body = multipart === undefined ? await readJsonBody(request) : multipart.fields;
    const method = request.method ?? 'GET';
    const path = new URL(request.url ?? '/', 'http://fake').pathname;
    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    const call: WhatsAppApiCall = {
      method,
      path,
      token,
      body: body ?? {},
      ...(multipart === undefined ? {} : { files: multipart.files }),
      status: null,
      at,
    };
    calls.push(call);
    const send = (answer: Answer) => {
      call.status = answer.status;
      if (response.destroyed) return;
      response.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      response.end(JSON.stringify(answer.body));
    };
    if (token !== accessToken) {
      return send(graphError(401, 190, 'Invalid OAuth access token - Cannot parse access token'));
    }
    const download = /^\/media-download\/(.+)$/.exec(path);
    if (method === 'GET' && download !== null) {
      const stored = media.get(download[1] as string);
      if (stored === undefined) return send(graphError(404, 100, 'Media not found'));
      call.status = 200;
      response.writeHead(200, {
        'content-type': stored.mimeType,
        'content-length': String(stored.content.length),
      });
      response.end(stored.content);
      return;
    }
    const isUpload = method === 'POST' && path.endsWith('/media');
    const failure = (isUpload ? uploadFailures.shift() : undefined) ?? failures.shift() ?? null;
    if (failure?.kind === 'hang') {
      hung.add(response);
      return;
    }
    send(failure === null ? accept(method, path, body, multipart?.files, at) : failureAnswer(failure));
  });
  server.keepAliveTimeout = 1;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  function inbound({
    type,
    part,
    from = '16505551234',
    name = 'Sheena Nelson',
    replyTo,
  }: MessageFields): ChangeValue {
    return {
      contacts: [{ profile: { name }, wa_id: from }],
      messages: [
        {
          from,
          id: wamid(),
          timestamp: String(Math.floor(Date.now() / 1000)),
          type,
          [type]: part,
          ...(replyTo === undefined ? {} : { context: { from: '15550783881', id: replyTo } }),
        },
      ],
    };
  }

  const deliveredTo = (to: string) =>
    sent.filter((entry) => entry.to === to && entry.type === 'text').map((entry) => entry.text);

  return {
    url,
    appSecret,
    accessToken,
    phoneNumberId,
    verifyToken,
    calls,
    sent: () => [...sent],
    uploads: () => [...uploads],
    deliveredTo,
    waitForDelivered(to, count, timeoutMs = 10_000) {
      return eventually(
        () => {
          const texts = deliveredTo(to);
          return texts.length >= count && texts;
        },
        timeoutMs,
        `fake whatsapp: ${count} message(s) delivered to ${to}`,
      );
    },
    rateLimitViolations: () => limiter.violations(),
    failNext(count, failure, { after = 0 } = {}) {
      failures.push(...Array<null>(after).fill(null), ...Array<FakeWhatsAppFailure>(count).fill(failure));
    },
    failNextUploads(count, failure) {
      uploadFailures.push(...Array<FakeWhatsAppFailure>(count).fill(failure));
    },
    textMessage({ text, extra, ...sender }) {
      const value = inbound({ type: 'text', part: { body: text }, ...sender });
      return { ...value, messages: [{ ...value.messages?.[0], ...extra }] };
    },
    message: inbound,
    status(messageId, recipient, status = 'delivered') {
      return {
        statuses: [
          {
            id: messageId,
            status,
            timestamp: String(Math.floor(Date.now() / 1000)),
            recipient_id: recipient,
          },
        ],
      };
    },
    notification(...values) {
      return {
        object: 'whatsapp_business_account',
        entry: [
          {
            id: '102290129340398',
            changes: values.map((value) => ({
              value: {
                messaging_product: 'whatsapp',
                metadata: { display_phone_number: '15550783881', phone_number_id: phoneNumberId },
                ...value,
              },
              field: 'messages',
            })),
          },
        ],
      };
    },
    async deliverWebhook(target, body, deliverOptions = {}) {
      const raw = typeof body === 'string' ? body : JSON.stringify(body);
      const signature =
        deliverOptions.signature === undefined ? signWhatsAppBody(appSecret, raw) : deliverOptions.signature;
      return postWebhook(target, raw, {
        'content-type': 'application/json',
        'user-agent': 'facebookexternalua',
        ...(signature === null ? {} : { 'x-hub-signature-256': signature }),
      });
    },
    async verifySubscription(target, query = {}) {
      const search = new URLSearchParams({
        'hub.mode': query.mode ?? 'subscribe',
        'hub.challenge': query.challenge ?? String(1_000_000_000 + Math.floor(Math.random() * 1e9)),
        'hub.verify_token': query.verifyToken ?? verifyToken,
      });
      const response = await fetch(`${target}?${search}`);
      return { status: response.status, body: await response.text() };
    },
    addMedia(content, mimeType) {
      const id = String(1_000_000_000_000_000 + media.size + 1);
      media.set(id, { content, mimeType });
      return id;
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
