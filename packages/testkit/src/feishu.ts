import { createCipheriv, createHash, randomBytes, randomUUID } from 'node:crypto';
import { type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually } from './eventually.js';
import { readJsonBody } from './json-body.js';
import { type UploadedFile, multipartBoundary, parseMultipart, readRawBody } from './multipart-body.js';
import { type FakeRateLimit, createFakeRateLimiter } from './fake-rate-limits.js';
import {
  FAKE_CLIENT_CONFIG,
  type FakeLongConnection,
  type LongConnectionClientConfig,
  serveLongConnection,
} from './feishu-long-connection.js';

/**
 * A fake Feishu / Lark open platform for tests: a node:http server on 127.0.0.1 (configure its
 * `url` as the channel's `domain`) answering what a bot uses, as open.feishu.cn does: the tenant
 * access token of a self-built app (`POST /open-apis/auth/v3/tenant_access_token/internal`, a
 * wrong secret answers code 10014), the bot's info (`GET /open-apis/bot/v3/info`), and text
 * messages: reply (`POST /open-apis/im/v1/messages/:id/reply`, deduplicated by `uuid`), create
 * (`POST /open-apis/im/v1/messages`) and edit (`PUT /open-apis/im/v1/messages/:id`; as Feishu, at
 * most 20 times a message: the 21st answers code 230072), and reads a bot message back (`GET
 * /open-apis/im/v1/messages/:id`, its last text as `data.items[0].body.content`). Files are
 * uploaded as the im/v1 reference has it — images with `POST /open-apis/im/v1/images` (multipart
 * `image_type=message`, `image`) answering `data.image_key`, other files with `POST
 * /open-apis/im/v1/files` (`file_type` stream, opus, mp4, pdf, doc, xls or ppt, `file_name`,
 * `file`) answering `data.file_key` — and sent as messages of `msg_type` image (`{"image_key"}`),
 * file or audio (`{"file_key"}`, audio of an opus upload only). API calls
 * need `Authorization: Bearer <issued tenant token>` (else code 99991663). Every call is recorded;
 * the next calls of an endpoint can answer a frequency limit (HTTP 429, code 99991400,
 * `x-ogw-ratelimit-reset`), a refused token, a 500, or hang. With `rateLimits.perChat` it enforces
 * a chat's message limit on replies, posts and edits (not reads): a call past it answers HTTP 429, code 230020,
 * and is counted as a violation. Events are POSTed with `deliverEvent`
 * as Feishu sends them: with an encrypt key, encrypted (AES-256-CBC, key = SHA-256 of the encrypt
 * key) and signed (`X-Lark-Signature` = hex SHA-256 of timestamp + nonce + encrypt key + body).
 * The long connection ("websocket mode") is served too: `POST /callback/ws/endpoint` (with the
 * app id and secret; a wrong secret answers code 514) hands out the WebSocket URL, and
 * `longConnection.deliver` sends events over it (`feishu-long-connection.ts`). A user's files
 * (`addResource`) are served at `GET /open-apis/im/v1/messages/:message_id/resources/:file_key?type=`
 * to an issued tenant token, under their message and `type` only.
 */

// biome-ignore lint/suspicious/noExplicitAny: open platform payloads are read freely by tests
type Json = Record<string, any>;

export type FeishuEndpoint =
  | 'token'
  | 'bot_info'
  | 'reply'
  | 'create'
  | 'update'
  | 'get'
  | 'resource'
  | 'ws_endpoint'
  | 'image_upload'
  | 'file_upload';

/** One API call, whatever it answered. */
export interface FeishuApiCall {
  endpoint: FeishuEndpoint | 'unknown';
  /** The message id in the path (reply, update, resource). */
  messageId?: string;
  /** The file key and `type` of a resource download. */
  resource?: { fileKey: string; type: string | null };
  /** The chat a reply, post or edit went into, when the fake knows it. */
  chatId?: string;
  /** The Bearer token of the Authorization header (none for `ws_endpoint`, which carries the secret). */
  token: string | undefined;
  /** The JSON body, or the text fields of a multipart one (an upload). */
  body: Json;
  /** The file parts of a multipart body, by part name. */
  files?: Record<string, UploadedFile>;
  /** The HTTP status answered; `null` while pending or when it hung. */
  status: number | null;
  /** Milliseconds since the epoch at which it arrived. */
  at: number;
}

/** A message the bot posted; `texts` holds what it showed, first the posted text, then each edit. */
export interface FeishuBotMessage {
  id: string;
  chatId: string;
  /** The message it replies to (reply API). */
  replyTo?: string;
  inThread: boolean;
  msgType: 'text' | 'image' | 'file' | 'audio';
  /** The texts of a text message; empty for a file. */
  texts: string[];
  /** The `image_key` or `file_key` of a file message. */
  key?: string;
}

/** A file uploaded with `POST /open-apis/im/v1/images` or `/files`. */
export interface FeishuUpload {
  /** The `image_key` or `file_key` answered. */
  key: string;
  kind: 'image' | 'file';
  /** The `file_type` of a file: stream, opus, mp4, pdf, doc, xls or ppt. */
  fileType?: string;
  /** The `file_name` of a file. */
  fileName?: string;
  file: UploadedFile;
}

/** What the next calls of an endpoint answer instead of succeeding (see `failNext`). */
export type FakeFeishuFailure =
  | { kind: 'rate_limited'; resetSeconds?: number }
  | { kind: 'auth' }
  | { kind: 'http_status'; status: number }
  /** HTTP 200 with this open platform `code`: how the token endpoint refuses, and others too. */
  | { kind: 'code'; code: number }
  /** What the 21st edit of a message answers (code 230072), as when another process edited it. */
  | { kind: 'edit_limit' }
  /** Never answers (until `close`); nothing is sent. */
  | { kind: 'hang' }
  /** Does what was asked, then answers this HTTP status: an answer lost on its way back. */
  | { kind: 'applies_then_fails'; status: number };

export interface FakeFeishuOptions {
  appId?: string;
  appSecret?: string;
  /** Encrypts and signs events when set. Default: `fake-feishu-encrypt-key`; `null` for plain events. */
  encryptKey?: string | null;
  /** Carried in event bodies. Default: `fake-feishu-verification-token`. */
  verificationToken?: string;
  /** The bot's open_id. Default: `ou_bot0000`. */
  botOpenId?: string;
  /** Timings handed to long-connection clients, in seconds. Default: `FAKE_CLIENT_CONFIG`. */
  longConnection?: Partial<LongConnectionClientConfig>;
  /** Limits enforced on replies, posts and edits; a limit left out is not enforced. */
  rateLimits?: {
    /** Every reply, post or edit into one chat (Feishu: 5 a second). */
    perChat?: FakeRateLimit;
    /** See `fake-rate-limits.ts`. Default: `DEFAULT_TOLERANCE_MS`. */
    toleranceMs?: number;
  };
}

/** Fields of an `im.message.receive_v1` event that `messageEvent` fills in when left out. */
export interface MessageEventFields {
  text: string;
  /** Default: a p2p chat `oc_p2p_<sender>`. */
  chatType?: 'p2p' | 'group';
  chatId?: string;
  /** Default: `ou_user0001`. */
  senderOpenId?: string;
  /** `app` for a bot's message. Default: `user`. */
  senderType?: 'user' | 'app';
  /** Mentions the bot (`@_user_1` in front of the text). */
  mentionBot?: boolean;
  /** A topic the message is in. */
  threadId?: string;
  /** Default: a new uuid. */
  eventId?: string;
  /** A message of another kind than text, e.g. `{ messageType: 'image', content: { image_key } }`; `text` is then not sent. */
  kind?: { messageType: string; content: Json };
}

/** What an event POST got back. */
export interface FeishuEventAnswer {
  status: number;
  /** Parsed JSON, the text when it is not JSON, `null` when empty. */
  body: unknown;
  /** The `Retry-After` header of a refusal. */
  retryAfter?: string;
}

export interface FakeFeishu {
  /** The API base to configure as `domain` (`http://127.0.0.1:<port>`). */
  url: string;
  appId: string;
  appSecret: string;
  encryptKey: string | null;
  verificationToken: string;
  botOpenId: string;
  /** The long connection: where events go in websocket mode. */
  longConnection: FakeLongConnection;
  calls: FeishuApiCall[];
  callsTo(endpoint: FeishuEndpoint): FeishuApiCall[];
  /** Every message the bot posted, in order, with its edits. */
  botMessages(): FeishuBotMessage[];
  /** Every file uploaded, in order. */
  uploads(): FeishuUpload[];
  /** The texts the bot's text messages in a chat show now, in posting order. */
  shownIn(chatId: string): string[];
  /** Resolves once the bot's messages in `chatId` show `count` texts (rejects after `timeoutMs`). */
  waitForShown(chatId: string, count: number, timeoutMs?: number): Promise<string[]>;
  /** The next `count` calls of `endpoint` answer `failure`. */
  failNext(endpoint: FeishuEndpoint, count: number, failure: FakeFeishuFailure): void;
  /** Calls refused for exceeding `rateLimits`. */
  rateLimitViolations(): number;
  /** Tokens issued so far stop working (code 99991663), as when they expire early. */
  revokeTokens(): void;
  /** Every tenant access token issued so far, revoked ones too: secrets no log may show. */
  issuedTokens(): string[];
  /** A schema 2.0 `im.message.receive_v1` event body; its message can be replied to. */
  messageEvent(fields: MessageEventFields): Json;
  /**
   * A file in a user's message, served to the bot's tenant token at the message's resources
   * endpoint: `type: image` for an image key, `file` for a file, audio or video key.
   */
  addResource(resource: {
    messageId: string;
    fileKey: string;
    type: 'image' | 'file';
    content: Buffer;
    contentType: string;
  }): void;
  /**
   * POSTs `body` to `url` as Feishu does: encrypted and signed when the fake has an encrypt key;
   * `signature` overrides the header (`null` leaves the signature headers out); `plain` posts the
   * body as it is, unencrypted (a body that is not JSON); `timestamp` (Unix seconds) is signed
   * instead of now.
   */
  deliverEvent(
    url: string,
    body: Json | string,
    options?: { signature?: string | null; plain?: boolean; timestamp?: number },
  ): Promise<FeishuEventAnswer>;
  /** The console's URL check: `url_verification` with the challenge, encrypted when a key is set, never signed. */
  verifyUrl(url: string, options?: { token?: string }): Promise<FeishuEventAnswer & { challenge: string }>;
  close(): Promise<void>;
}

/** `X-Lark-Signature` of a body. */
export function signFeishuBody(timestamp: string, nonce: string, encryptKey: string, body: string): string {
  return createHash('sha256')
    .update(timestamp + nonce + encryptKey + body)
    .digest('hex');
}

/** `{ encrypt }` of a body as Feishu encrypts it. */
export function encryptFeishuBody(encryptKey: string, plain: string): string {
  const iv = randomBytes(16);
  const key = createHash('sha256').update(encryptKey).digest();
  const cipher = createCipheriv('aes-256-cbc', key, iv);
  const encrypted = Buffer.concat([iv, cipher.update(plain, 'utf8'), cipher.final()]).toString('base64');
  return JSON.stringify({ encrypt: encrypted });
}

interface Answer {
  status: number;
  body: Json;
  headers?: Record<string, string>;
  /** A file answered instead of the JSON body. */
  file?: { content: Buffer; contentType: string };
}

const ok = (data: Json = {}): Answer => ({ status: 200, body: { code: 0, msg: 'success', ...data } });
const TOKEN_TTL_S = 7200;
/** Feishu's limit on edits of one message. */
const MAX_EDITS = 20;
const EDIT_LIMIT_REACHED: Answer = {
  status: 400,
  body: { code: 230072, msg: 'The message has reached the number of times it can be edited.' },
};

/** What a message shows: its text, or the key of the file it sends. */
interface Content {
  msgType: FeishuBotMessage['msgType'];
  text?: string;
  key?: string;
}

/** The `file_type`s `POST /open-apis/im/v1/files` takes. */
const FILE_TYPES = ['stream', 'opus', 'mp4', 'pdf', 'doc', 'xls', 'ppt'];

/** Starts a fake open platform on 127.0.0.1 and an ephemeral port. */
export async function startFakeFeishu(options: FakeFeishuOptions = {}): Promise<FakeFeishu> {
  // As the console shows app ids: the SDK's long connection refuses any other shape.
  const appId = options.appId ?? 'cli_fa4e000000000001';
  const appSecret = options.appSecret ?? 'fake-feishu-app-secret';
  const encryptKey = options.encryptKey === undefined ? 'fake-feishu-encrypt-key' : options.encryptKey;
  const verificationToken = options.verificationToken ?? 'fake-feishu-verification-token';
  const botOpenId = options.botOpenId ?? 'ou_bot0000';
  const calls: FeishuApiCall[] = [];
  const failures: Array<{ endpoint: FeishuEndpoint; left: number; failure: FakeFeishuFailure }> = [];
  const tokens = new Set<string>();
  const issued: string[] = [];
  /** Chat of every message known: users' (from `messageEvent`) and the bot's. */
  const chatOf = new Map<string, string>();
  const bot: FeishuBotMessage[] = [];
  const byUuid = new Map<string, FeishuBotMessage>();
  const uploads: FeishuUpload[] = [];
  const hung: ServerResponse[] = [];
  /** Users' files by `<message id>/<file key>`. */
  const resources = new Map<string, { type: 'image' | 'file'; content: Buffer; contentType: string }>();
  const perChat = options.rateLimits?.perChat;
  const limiter = createFakeRateLimiter(options.rateLimits?.toleranceMs);

  function routeOf(
    method: string,
    pathname: string,
  ): { endpoint: FeishuEndpoint | 'unknown'; messageId?: string; fileKey?: string } {
    if (method === 'POST' && pathname === '/open-apis/auth/v3/tenant_access_token/internal')
      return { endpoint: 'token' };
    if (method === 'GET' && pathname === '/open-apis/bot/v3/info') return { endpoint: 'bot_info' };
    if (method === 'POST' && pathname === '/callback/ws/endpoint') return { endpoint: 'ws_endpoint' };
    if (method === 'POST' && pathname === '/open-apis/im/v1/messages') return { endpoint: 'create' };
    if (method === 'POST' && pathname === '/open-apis/im/v1/images') return { endpoint: 'image_upload' };
    if (method === 'POST' && pathname === '/open-apis/im/v1/files') return { endpoint: 'file_upload' };
    const reply = /^\/open-apis\/im\/v1\/messages\/([^/]+)\/reply$/.exec(pathname);
    if (method === 'POST' && reply)
      return { endpoint: 'reply', messageId: decodeURIComponent(reply[1] as string) };
    const resource = /^\/open-apis\/im\/v1\/messages\/([^/]+)\/resources\/([^/]+)$/.exec(pathname);
    if (method === 'GET' && resource)
      return {
        endpoint: 'resource',
        messageId: decodeURIComponent(resource[1] as string),
        fileKey: decodeURIComponent(resource[2] as string),
      };
    const update = /^\/open-apis\/im\/v1\/messages\/([^/]+)$/.exec(pathname);
    if (method === 'PUT' && update)
      return { endpoint: 'update', messageId: decodeURIComponent(update[1] as string) };
    if (method === 'GET' && update)
      return { endpoint: 'get', messageId: decodeURIComponent(update[1] as string) };
    return { endpoint: 'unknown' };
  }

  function post(chatId: string, content: Content, replyTo: string | undefined, inThread: boolean): Answer {
    const message: FeishuBotMessage = {
      id: `om_${randomUUID().replaceAll('-', '')}`,
      chatId,
      inThread,
      msgType: content.msgType,
      texts: content.text === undefined ? [] : [content.text],
      ...(content.key === undefined ? {} : { key: content.key }),
    };
    if (replyTo !== undefined) message.replyTo = replyTo;
    bot.push(message);
    chatOf.set(message.id, chatId);
    return ok({ data: { message_id: message.id, chat_id: chatId, msg_type: content.msgType } });
  }

  /**
   * What a message body shows: a non-empty text, or the key of an uploaded file of the right kind
   * (an image's `image_key`; a file's `file_key`; an audio's `file_key` of an opus upload). `null`
   * when it is none of these, which Feishu refuses.
   */
  function contentOf(body: Json): Content | null {
    if (typeof body.content !== 'string') return null;
    let content: Json;
    try {
      content = JSON.parse(body.content) as Json;
    } catch {
      return null;
    }
    if (body.msg_type === 'text') {
      const text = content.text;
      return typeof text === 'string' && text !== '' ? { msgType: 'text', text } : null;
    }
    const field = body.msg_type === 'image' ? 'image_key' : 'file_key';
    const upload = uploads.find((candidate) => candidate.key === content[field]);
    if (upload === undefined) return null;
    if (body.msg_type === 'image' && upload.kind === 'image') return { msgType: 'image', key: upload.key };
    if (body.msg_type === 'file' && upload.kind === 'file') return { msgType: 'file', key: upload.key };
    if (body.msg_type === 'audio' && upload.fileType === 'opus') return { msgType: 'audio', key: upload.key };
    return null;
  }

  /** An upload as the im/v1 image and file references describe it; 400 code 234001 when invalid. */
  function upload(call: FeishuApiCall): Answer {
    const invalid = (msg: string) => ({
      status: 400,
      body: { code: 234001, msg: `Invalid request param. ${msg}` },
    });
    const { body, files = {} } = call;
    if (call.endpoint === 'image_upload') {
      const image = files.image;
      if (body.image_type !== 'message') return invalid('image_type must be message');
      if (image === undefined || image.bytes.length === 0) return invalid('image is required');
      const key = `img_v3_${randomUUID().replaceAll('-', '')}`;
      uploads.push({ key, kind: 'image', file: image });
      return ok({ data: { image_key: key } });
    }
    const file = files.file;
    if (!FILE_TYPES.includes(body.file_type)) return invalid(`file_type must be one of ${FILE_TYPES}`);
    if (typeof body.file_name !== 'string' || body.file_name === '') return invalid('file_name is required');
    if (file === undefined || file.bytes.length === 0) return invalid('file is required');
    const key = `file_v3_${randomUUID().replaceAll('-', '')}`;
    uploads.push({ key, kind: 'file', fileType: body.file_type, fileName: body.file_name, file });
    return ok({ data: { file_key: key } });
  }

  function answer(call: FeishuApiCall, url: URL): Answer {
    const { body } = call;
    if (call.endpoint === 'token') {
      if (body.app_id !== appId || body.app_secret !== appSecret)
        return { status: 200, body: { code: 10014, msg: 'app secret invalid' } };
      const token = `t-${randomUUID()}`;
      tokens.add(token);
      issued.push(token);
      return { status: 200, body: { code: 0, msg: 'ok', tenant_access_token: token, expire: TOKEN_TTL_S } };
    }
    if (call.endpoint === 'ws_endpoint') {
      if (body.AppID !== appId || body.AppSecret !== appSecret)
        return { status: 200, body: { code: 514, msg: 'auth failed', data: {} } };
      return ok({ data: longConnection.endpoint() });
    }
    if (call.token === undefined || !tokens.has(call.token)) {
      return {
        status: 400,
        body: {
          code: 99991663,
          msg: 'Invalid access token for authorization. Please make a request with token attached.',
        },
      };
    }
    if (call.endpoint === 'bot_info')
      return ok({ bot: { open_id: botOpenId, app_name: 'Switchboard', activate_status: 2 } });
    if (call.endpoint === 'get') return getMessage(call.messageId as string);
    if (call.endpoint === 'resource') return resourceOf(call);
    if (call.endpoint === 'image_upload' || call.endpoint === 'file_upload') return upload(call);
    const content = contentOf(body);
    if (call.endpoint === 'unknown' || content === null)
      return { status: 400, body: { code: 230001, msg: 'invalid request or content' } };
    if (call.endpoint === 'create') {
      if (url.searchParams.get('receive_id_type') !== 'chat_id')
        return { status: 400, body: { code: 99992402, msg: 'field validation failed' } };
      return post(String(body.receive_id), content, undefined, false);
    }
    const target = call.messageId as string;
    const chatId = chatOf.get(target);
    if (chatId === undefined)
      return { status: 400, body: { code: 230011, msg: 'The message was not found' } };
    if (call.endpoint === 'update') {
      const message = bot.find((candidate) => candidate.id === target);
      if (message === undefined || content.text === undefined)
        return { status: 400, body: { code: 230027, msg: 'Lack of necessary permissions' } };
      // `texts` holds the posted text and one per edit.
      if (message.texts.length > MAX_EDITS) {
        return EDIT_LIMIT_REACHED;
      }
      message.texts.push(content.text);
      return ok({ data: {} });
    }
    const uuid = typeof body.uuid === 'string' ? body.uuid : undefined;
    const seen = uuid === undefined ? undefined : byUuid.get(uuid);
    if (seen !== undefined) return ok({ data: { message_id: seen.id, chat_id: seen.chatId } });
    const result = post(chatId, content, target, body.reply_in_thread === true);
    if (uuid !== undefined) byUuid.set(uuid, bot[bot.length - 1] as FeishuBotMessage);
    return result;
  }

  /** A bot message as `GET /open-apis/im/v1/messages/:message_id` shows it (others are not kept). */
  function getMessage(id: string): Answer {
    const message = bot.find((candidate) => candidate.id === id);
    if (message === undefined)
      return { status: 400, body: { code: 230011, msg: 'The message was not found' } };
    const shown =
      message.msgType === 'text'
        ? { text: message.texts.at(-1) }
        : { [message.msgType === 'image' ? 'image_key' : 'file_key']: message.key };
    const item = {
      message_id: id,
      msg_type: message.msgType,
      chat_id: message.chatId,
      ...(message.replyTo === undefined ? {} : { parent_id: message.replyTo }),
      updated: message.texts.length > 1,
      sender: { id: appId, id_type: 'app_id', sender_type: 'app' },
      body: { content: JSON.stringify(shown) },
    };
    return ok({ data: { items: [item] } });
  }

  /** A file of a user's message, when the key is the message's and `type` matches it. */
  function resourceOf(call: FeishuApiCall): Answer {
    const { fileKey, type } = call.resource as { fileKey: string; type: string | null };
    const stored = resources.get(`${call.messageId}/${fileKey}`);
    if (stored === undefined || stored.type !== type)
      return { status: 400, body: { code: 234003, msg: 'File not in msg.' } };
    return { status: 200, body: {}, file: stored };
  }

  /** The chat a reply, post or edit goes into, when known. */
  function chatOfCall(
    endpoint: FeishuEndpoint | 'unknown',
    messageId: string | undefined,
    url: URL,
    body: Json,
  ): string | undefined {
    if (messageId !== undefined) return chatOf.get(messageId);
    const byChatId = endpoint === 'create' && url.searchParams.get('receive_id_type') === 'chat_id';
    return byChatId && typeof body.receive_id === 'string' ? body.receive_id : undefined;
  }

  function failureFor(endpoint: FeishuEndpoint | 'unknown'): FakeFeishuFailure | null {
    const pending = failures.find((entry) => entry.endpoint === endpoint && entry.left > 0);
    if (pending === undefined) return null;
    pending.left -= 1;
    return pending.failure;
  }

  const server = createServer(async (request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    const { endpoint, messageId, fileKey } = routeOf(request.method ?? 'GET', url.pathname);
    const authorization = request.headers.authorization;
    const at = Date.now();
    // Uploads come as multipart/form-data, every other call as JSON.
    const boundary = multipartBoundary(request.headers['content-type']);
    const multipart =
      boundary === undefined ? undefined : parseMultipart(await readRawBody(request), boundary);
    const call: FeishuApiCall = {
      endpoint,
      ...(messageId === undefined ? {} : { messageId }),
      ...(fileKey === undefined ? {} : { resource: { fileKey, type: url.searchParams.get('type') } }),
      token: authorization?.startsWith('Bearer ') ? authorization.slice(7) : undefined,
      body: multipart === undefined ? ((await readJsonBody(request)) ?? {}) : multipart.fields,
      ...(multipart === undefined ? {} : { files: multipart.files }),
      status: null,
      at,
    };
    const chatId = chatOfCall(endpoint, messageId, url, call.body);
    if (chatId !== undefined) call.chatId = chatId;
    calls.push(call);
    const failure = endpoint === 'unknown' ? null : failureFor(endpoint);
    const waitMs =
      failure === null &&
      chatId !== undefined &&
      perChat !== undefined &&
      endpoint !== 'get' &&
      endpoint !== 'resource'
        ? limiter.admit([[`chat:${chatId}`, perChat]], call.at)
        : 0;
    if (failure?.kind === 'hang') {
      hung.push(response);
      return;
    }
    const result: Answer =
      waitMs > 0
        ? {
            status: 429,
            body: { code: 230020, msg: 'This operation triggers the frequency limit.' },
            headers: { 'x-ogw-ratelimit-reset': String(Math.ceil(waitMs / 1000)) },
          }
        : failure?.kind === 'rate_limited'
          ? {
              status: 429,
              body: { code: 99991400, msg: 'request trigger frequency limit' },
              headers: {
                'x-ogw-ratelimit-limit': '5',
                'x-ogw-ratelimit-reset': String(failure.resetSeconds ?? 1),
              },
            }
          : failure?.kind === 'auth'
            ? { status: 400, body: { code: 99991663, msg: 'Invalid access token for authorization' } }
            : failure?.kind === 'http_status'
              ? { status: failure.status, body: { code: 1, msg: 'internal error' } }
              : failure?.kind === 'code'
                ? { status: 200, body: { code: failure.code, msg: 'refused by the fake', data: {} } }
                : failure?.kind === 'edit_limit'
                  ? EDIT_LIMIT_REACHED
                  : failure?.kind === 'applies_then_fails'
                    ? {
                        ...answer(call, url),
                        status: failure.status,
                        body: { code: 1, msg: 'internal error' },
                      }
                    : answer(call, url);
    call.status = result.status;
    if (result.file !== undefined) {
      response.writeHead(result.status, {
        'content-type': result.file.contentType,
        'content-length': String(result.file.content.length),
      });
      response.end(result.file.content);
      return;
    }
    response.writeHead(result.status, { 'content-type': 'application/json', ...result.headers });
    response.end(JSON.stringify(result.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const longConnection = serveLongConnection(server, base, {
    ...FAKE_CLIENT_CONFIG,
    ...options.longConnection,
  });

  const shownIn = (chatId: string) =>
    bot
      .filter((message) => message.chatId === chatId && message.msgType === 'text')
      .map((message) => message.texts.at(-1) as string);

  async function postEvent(
    url: string,
    raw: string,
    headers: Record<string, string>,
  ): Promise<FeishuEventAnswer> {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: raw,
    });
    const text = await response.text();
    let body: unknown = text === '' ? null : text;
    try {
      body = JSON.parse(text);
    } catch {}
    const retryAfter = response.headers.get('retry-after');
    return { status: response.status, body, ...(retryAfter === null ? {} : { retryAfter }) };
  }

  return {
    url: base,
    appId,
    appSecret,
    encryptKey,
    verificationToken,
    botOpenId,
    longConnection,
    calls,
    callsTo: (endpoint) => calls.filter((call) => call.endpoint === endpoint),
    botMessages: () => bot,
    uploads: () => [...uploads],
    shownIn,
    waitForShown: (chatId, count, timeoutMs = 5_000) =>
      eventually(
        () => {
          const shown = shownIn(chatId);
          return shown.length >= count && shown;
        },
        timeoutMs,
        `${count} bot messages shown in ${chatId}`,
      ),
    failNext(endpoint, count, failure) {
      failures.push({ endpoint, left: count, failure });
    },
    rateLimitViolations: () => limiter.violations(),
    revokeTokens: () => tokens.clear(),
    issuedTokens: () => [...issued],
    messageEvent(fields) {
      const senderOpenId = fields.senderOpenId ?? 'ou_user0001';
      const chatType = fields.chatType ?? 'p2p';
      const chatId = fields.chatId ?? `oc_${chatType}_${senderOpenId}`;
      const messageId = `om_${randomUUID().replaceAll('-', '')}`;
      chatOf.set(messageId, chatId);
      const mention = {
        key: '@_user_1',
        id: { open_id: botOpenId, union_id: 'on_bot', user_id: '' },
        name: 'Switchboard',
        tenant_key: 'fake',
      };
      return {
        schema: '2.0',
        header: {
          event_id: fields.eventId ?? randomUUID().replaceAll('-', ''),
          token: verificationToken,
          create_time: String(Date.now()),
          event_type: 'im.message.receive_v1',
          tenant_key: 'fake',
          app_id: appId,
        },
        event: {
          sender: {
            sender_id: { open_id: senderOpenId, union_id: `on_${senderOpenId}` },
            sender_type: fields.senderType ?? 'user',
            tenant_key: 'fake',
          },
          message: {
            message_id: messageId,
            create_time: String(Date.now()),
            chat_id: chatId,
            chat_type: chatType,
            message_type: fields.kind?.messageType ?? 'text',
            content: JSON.stringify(
              fields.kind?.content ?? { text: fields.mentionBot ? `@_user_1 ${fields.text}` : fields.text },
            ),
            ...(fields.threadId === undefined ? {} : { thread_id: fields.threadId, root_id: messageId }),
            ...(fields.mentionBot ? { mentions: [mention] } : {}),
          },
        },
      };
    },
    addResource({ messageId, fileKey, ...stored }) {
      resources.set(`${messageId}/${fileKey}`, stored);
    },
    deliverEvent(url, body, deliverOptions = {}) {
      const plain = typeof body === 'string' ? body : JSON.stringify(body);
      if (encryptKey === null) return postEvent(url, plain, {});
      const raw = deliverOptions.plain === true ? plain : encryptFeishuBody(encryptKey, plain);
      const timestamp = String(deliverOptions.timestamp ?? Math.floor(Date.now() / 1000));
      const nonce = randomUUID();
      const signature =
        deliverOptions.signature === undefined
          ? signFeishuBody(timestamp, nonce, encryptKey, raw)
          : deliverOptions.signature;
      const headers: Record<string, string> =
        signature === null
          ? {}
          : {
              'x-lark-request-timestamp': timestamp,
              'x-lark-request-nonce': nonce,
              'x-lark-signature': signature,
            };
      return postEvent(url, raw, headers);
    },
    async verifyUrl(url, verifyOptions = {}) {
      const challenge = randomUUID();
      const token = verifyOptions.token ?? verificationToken;
      const plain = JSON.stringify({ challenge, token, type: 'url_verification' });
      const raw = encryptKey === null ? plain : encryptFeishuBody(encryptKey, plain);
      return { ...(await postEvent(url, raw, {})), challenge };
    },
    async close() {
      for (const response of hung) response.destroy();
      longConnection.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
