import { type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type FakeRateLimit, createFakeRateLimiter } from './fake-rate-limits.js';
import { readJsonBody } from './json-body.js';
import { type UploadedFile, multipartBoundary, parseMultipart, readRawBody } from './multipart-body.js';

/**
 * A fake Telegram Bot API for tests: a node:http server on 127.0.0.1 that answers
 * `POST /bot<token>/<method>` like api.telegram.org does. Point grammY at it with
 * `client: { apiRoot: fake.url }` (the channel's `api_root`). It implements getMe,
 * deleteWebhook, setWebhook, getWebhookInfo, getUpdates (long poll honouring `offset`,
 * `limit`, `timeout` and `allowed_updates`; 409 while a webhook is set), sendMessage
 * (returns a full Message), editMessageText (of the bot's own messages; 400 "message is not
 * modified" for the same text, as Telegram answers) and sendChatAction (the documented actions),
 * records every call, and can answer 429 with `retry_after`, another
 * error, or never, for the next calls of a method. Like Telegram, a getUpdates arriving while
 * another is open ends the open one with 409 Conflict; the fake records the most getUpdates
 * calls ever open at once and how often each update was fetched. Updates are queued with `pushUpdate` for
 * getUpdates, or POSTed to a webhook with `deliverWebhook`, as Telegram does. With `rateLimits`
 * it enforces Telegram's limits on messages sent and edited (`TELEGRAM_RATE_LIMITS`): a call past one is
 * answered 429 with `parameters.retry_after` and counted as a violation. Files added with
 * `addFile` are answered by getFile (a File with `file_path`; 400 "file is too big" past the Bot
 * API's 20 MB download limit, or `downloadLimitBytes`) and served at `GET /file/bot<token>/<file_path>` with their length.
 */

/** A Telegram user as the Bot API returns it. */
export interface FakeTelegramUser {
  id: number;
  is_bot: boolean;
  first_name: string;
  last_name?: string;
  username?: string;
}

/** Limits on sending and editing messages; a limit left out is not enforced. */
export interface FakeTelegramRateLimits {
  perBot?: FakeRateLimit;
  perChat?: FakeRateLimit;
  /** On top of `perChat` for group chats (negative chat ids). */
  perGroup?: FakeRateLimit;
  /** See `fake-rate-limits.ts`. Default: `DEFAULT_TOLERANCE_MS`. */
  toleranceMs?: number;
}

/** Telegram's documented limits: 30 messages a second per bot, 1 per chat, 20 a minute per group. */
export const TELEGRAM_RATE_LIMITS: FakeTelegramRateLimits = Object.freeze({
  perBot: { limit: 30, perMs: 1000 },
  perChat: { limit: 1, perMs: 1000 },
  perGroup: { limit: 20, perMs: 60_000 },
});

export interface FakeTelegramOptions {
  /** The bot token the path must carry. Default: `123456789:fake-telegram-token`. */
  token?: string;
  /** What getMe answers. Default: id 7000000001, username `switchboard_bot`. */
  botUser?: FakeTelegramUser;
  /** Limits enforced on the methods that post into a chat. Default: none. */
  rateLimits?: FakeTelegramRateLimits;
  /**
   * Largest file getFile hands out. Default: the Bot API's 20 MB; a local Bot API server
   * (`--local`) serves files of any size.
   */
  downloadLimitBytes?: number;
}

// biome-ignore lint/suspicious/noExplicitAny: Bot API payloads are read freely by tests
type Json = Record<string, any>;

/** One Bot API call, whatever it answered. */
export interface RecordedTelegramCall {
  method: string;
  path: string;
  body: Json;
  /** The HTTP status it was answered with; `null` while it is pending or if it hung. */
  status: number | null;
  /** Milliseconds since the epoch at which it arrived. */
  at: number;
}

/** A sendMessage call that succeeded: the parameters and the Message returned. */
export interface SentTelegramMessage {
  body: Json;
  message: Json;
  at: number;
}

/**
 * A sendPhoto, sendDocument or sendAudio call that succeeded: the file uploaded with it
 * (multipart/form-data, `attach://` or the field itself), or the URL Telegram was to fetch.
 */
export interface SentTelegramMedia {
  method: 'sendPhoto' | 'sendDocument' | 'sendAudio';
  body: Json;
  /** The uploaded file; undefined when the call passed a URL (or a file_id). */
  file?: UploadedFile;
  /** The URL (or file_id) passed instead of a file. */
  url?: string;
  message: Json;
  at: number;
}

/** An editMessageText call that succeeded. */
export interface TelegramEdit {
  chatId: string;
  messageId: number;
  text: string;
  at: number;
}

/** A file the fake serves, as getFile describes it. */
export interface FakeTelegramFile {
  file_id: string;
  file_unique_id: string;
  file_size: number;
  file_path: string;
}

/** One download of a file's bytes. */
export interface FakeTelegramDownload {
  path: string;
  bytesSent: number;
  state: 'sending' | 'complete' | 'aborted';
}

/** What the next calls of a method answer instead of succeeding (see `failNext`). */
export type FakeTelegramFailure =
  | { status: 429; retryAfterS: number }
  | { status: number; description?: string }
  | { hang: true };

/** The webhook set with setWebhook. */
export interface FakeTelegramWebhook {
  url: string;
  secret_token?: string;
  allowed_updates?: string[];
}

/** What `deliverWebhook` got back. */
export interface WebhookAnswer {
  status: number;
  headers: Headers;
  /** The parsed JSON body, or the text when it is not JSON (`''` when empty). */
  body: unknown;
}

export interface FakeTelegram {
  /** The API root to configure as the channel's `api_root` (`http://127.0.0.1:<port>`). */
  url: string;
  token: string;
  botUser: FakeTelegramUser;
  /** Every call, in arrival order. */
  calls: RecordedTelegramCall[];
  /** The calls of one method, in order. */
  callsOf(method: string): RecordedTelegramCall[];
  /** The sendMessage calls that succeeded, in order. */
  sentMessages(): SentTelegramMessage[];
  /** The sendPhoto, sendDocument and sendAudio calls that succeeded, in order. */
  sentMedia(): SentTelegramMedia[];
  /** The texts delivered to one chat (successful sendMessage calls), in order. */
  deliveredTo(chatId: number | string): string[];
  /** Calls answered 429 for exceeding `rateLimits` (injected failures not included). */
  rateLimitViolations(): number;
  /** The editMessageText calls that succeeded, in order. */
  edits(): TelegramEdit[];
  /** The text a message of the bot shows now (after its edits); undefined for an unknown message. */
  textOf(chatId: number | string, messageId: number): string | undefined;
  /** The current webhook, or `null` after deleteWebhook / before setWebhook. */
  webhook(): FakeTelegramWebhook | null;
  /**
   * Makes getWebhookInfo report a failed delivery to the webhook (`last_error_message`, with
   * `last_error_date` now), as Telegram does when the webhook URL does not answer; null clears it.
   */
  setWebhookError(message: string | null): void;
  /** Updates confirmed by a getUpdates `offset`: every update_id below this number. */
  confirmedOffset(): number;
  /** Updates queued and not yet confirmed. */
  pendingUpdates(): Json[];
  /**
   * The most getUpdates calls open at the same moment (a call is open from its arrival until it
   * is answered or its client goes away): more than 1 means two pollers competed for the token.
   */
  maxOpenPolls(): number;
  /** How many getUpdates answers carried each update, by update_id (a refetch counts twice). */
  fetchCounts(): Map<number, number>;
  /**
   * A Message with `message_id` (unique per fake) and `date` filled in; pass `chat`, `from`,
   * `text`… The chat is remembered, so replies to it carry the full chat object.
   */
  message(fields: Json): Json;
  /**
   * Queues an update for getUpdates and wakes a pending long poll. `update_id` is assigned
   * (increasing) when missing; a given one may repeat an earlier id. Returns the update.
   */
  pushUpdate(update: Json): Json;
  /**
   * POSTs an update to `url` as Telegram does: JSON, and `X-Telegram-Bot-Api-Secret-Token` when
   * `secretToken` is given. A string body is sent as is (for malformed-body tests).
   */
  deliverWebhook(url: string, update: Json | string, secretToken?: string): Promise<WebhookAnswer>;
  /**
   * A file the bot may download: getFile answers it by its `file_id`, and its bytes are served at
   * `<url>/file/bot<token>/<file_path>`. Pass its `file_id` in a message's `photo`, `document`…
   */
  addFile(content: Buffer, fileName?: string): FakeTelegramFile;
  /**
   * File downloads (`GET /file/bot…`), in order: `sending` while under way, `complete` once all
   * was written, `aborted` when the client closed the connection first.
   */
  fileDownloads(): FakeTelegramDownload[];
  /** The next `count` calls of `method` answer `failure` instead. */
  failNext(method: string, count: number, failure: FakeTelegramFailure): void;
  /** Until called again with null, every call of `method` answers `failure` (the platform is down). */
  failAll(method: string, failure: FakeTelegramFailure | null): void;
  close(): Promise<void>;
}

const DEFAULT_TOKEN = '123456789:fake-telegram-token';
const DEFAULT_BOT_USER: FakeTelegramUser = {
  id: 7_000_000_001,
  is_bot: true,
  first_name: 'Switchboard',
  username: 'switchboard_bot',
};
const TEXT_LIMIT = 4096;
/** The methods that post into a chat, and so count against the rate limits: sends and edits alike. */
const RATE_LIMITED_METHODS = new Set([
  'sendMessage',
  'editMessageText',
  'sendPhoto',
  'sendDocument',
  'sendAudio',
]);

/** The parameter each media method takes its file in. */
const MEDIA_FIELDS = { sendPhoto: 'photo', sendDocument: 'document', sendAudio: 'audio' } as const;
type MediaMethod = keyof typeof MEDIA_FIELDS;

/**
 * A multipart call's fields as the Bot API reads them: each field's JSON value (objects, numbers)
 * where it parses, else its text; files stay apart.
 */
function multipartFields(fields: Record<string, string>): Json {
  const out: Json = {};
  for (const [key, value] of Object.entries(fields)) {
    try {
      const parsed: unknown = JSON.parse(value);
      out[key] = typeof parsed === 'object' || typeof parsed === 'number' ? parsed : value;
    } catch {
      out[key] = value;
    }
  }
  return out;
}

/** The `action` values sendChatAction accepts (Bot API reference). */
const CHAT_ACTIONS = new Set([
  'typing',
  'upload_photo',
  'record_video',
  'upload_video',
  'record_voice',
  'upload_voice',
  'upload_document',
  'choose_sticker',
  'find_location',
  'record_video_note',
  'upload_video_note',
]);
const DEFAULT_UPDATES_LIMIT = 100;
/** The Bot API's download limit: getFile refuses larger files. */
const DOWNLOAD_LIMIT_BYTES = 20 * 1024 * 1024;

interface Answer {
  status: number;
  body: Json;
}

const ok = (result: unknown): Answer => ({ status: 200, body: { ok: true, result } });
const fail = (status: number, description: string, parameters?: Json): Answer => ({
  status,
  body: { ok: false, error_code: status, description, ...(parameters === undefined ? {} : { parameters }) },
});

const DESCRIPTIONS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden: bot was blocked by the user',
  404: 'Not Found',
  409: 'Conflict',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
};

/** The kind of an update: its one field besides `update_id`. */
function kindOf(update: Json): string | undefined {
  return Object.keys(update).find((key) => key !== 'update_id');
}

/** Starts the fake on 127.0.0.1, port 0. */
export async function startFakeTelegram(options: FakeTelegramOptions = {}): Promise<FakeTelegram> {
  const token = options.token ?? DEFAULT_TOKEN;
  const botUser = options.botUser ?? DEFAULT_BOT_USER;
  const calls: RecordedTelegramCall[] = [];
  const sent: SentTelegramMessage[] = [];
  const media: SentTelegramMedia[] = [];
  const edits: TelegramEdit[] = [];
  /** The text of each message the bot sent, by `<chat id>:<message id>`. */
  const texts = new Map<string, string>();
  const chats = new Map<string, Json>();
  const failures = new Map<string, FakeTelegramFailure[]>();
  const down = new Map<string, FakeTelegramFailure>();
  const hung = new Set<ServerResponse>();
  /** Long polls waiting for updates: each re-checks the queue when woken. */
  const waiters = new Set<() => void>();
  /** Open long polls, each ended with 409 when another getUpdates arrives. */
  const openPolls = new Set<() => void>();
  let maxOpenPolls = 0;
  const fetchCounts = new Map<number, number>();
  let queue: Json[] = [];
  let webhook: FakeTelegramWebhook | null = null;
  let webhookError: { message: string; date: number } | null = null;
  let confirmed = 0;
  let nextUpdateId = 100_000;
  let nextMessageId = 1;
  const rateLimits = options.rateLimits ?? {};
  const limiter = createFakeRateLimiter(rateLimits.toleranceMs);
  const files = new Map<string, { file: FakeTelegramFile; content: Buffer }>();
  const downloads: FakeTelegramDownload[] = [];

  /** 429 with `retry_after` (whole seconds, as Telegram) when a call into the chat is past a limit. */
  function overRateLimit(body: Json, arrivedAt: number): Answer | null {
    const chat = String(body.chat_id);
    const buckets: Array<readonly [string, FakeRateLimit]> = [];
    if (rateLimits.perBot !== undefined) buckets.push(['bot', rateLimits.perBot]);
    if (rateLimits.perChat !== undefined) buckets.push([`chat:${chat}`, rateLimits.perChat]);
    if (rateLimits.perGroup !== undefined && chat.startsWith('-'))
      buckets.push([`group:${chat}`, rateLimits.perGroup]);
    if (buckets.length === 0) return null;
    const waitMs = limiter.admit(buckets, arrivedAt);
    if (waitMs === 0) return null;
    const retryAfterS = Math.ceil(waitMs / 1000);
    return fail(429, `Too Many Requests: retry after ${retryAfterS}`, { retry_after: retryAfterS });
  }

  /** Assigns the next update_id when missing; a given numeric one moves the counter past it. */
  function withUpdateId(update: Json): Json {
    const full = { ...update, update_id: update.update_id ?? nextUpdateId++ };
    if (Number.isSafeInteger(full.update_id)) nextUpdateId = Math.max(nextUpdateId, full.update_id + 1);
    return full;
  }

  function rememberChat(update: Json): void {
    const chat = (update[kindOf(update) ?? ''] as Json | undefined)?.chat as Json | undefined;
    if (chat?.id !== undefined) chats.set(String(chat.id), chat);
  }

  /** Drops confirmed updates and those the caller did not ask for; returns what is left to send. */
  function takeUpdates(body: Json): Json[] {
    const offset = typeof body.offset === 'number' ? body.offset : undefined;
    if (offset !== undefined && offset > 0) {
      confirmed = Math.max(confirmed, offset);
      queue = queue.filter((update) => update.update_id >= offset);
    }
    const allowed =
      Array.isArray(body.allowed_updates) && body.allowed_updates.length > 0 ? body.allowed_updates : null;
    // Telegram never creates updates of kinds the bot did not ask for.
    if (allowed !== null) queue = queue.filter((update) => allowed.includes(kindOf(update)));
    const limit = typeof body.limit === 'number' && body.limit > 0 ? body.limit : DEFAULT_UPDATES_LIMIT;
    return queue.slice(0, limit);
  }

  /** Answers `updates`, counting each one's fetches. */
  function fetched(updates: Json[]): Answer {
    for (const update of updates) {
      if (typeof update.update_id === 'number')
        fetchCounts.set(update.update_id, (fetchCounts.get(update.update_id) ?? 0) + 1);
    }
    return ok(updates);
  }

  function getUpdates(body: Json, response: ServerResponse): Promise<Answer> | Answer {
    if (webhook !== null) {
      return fail(
        409,
        "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
      );
    }
    maxOpenPolls = Math.max(maxOpenPolls, openPolls.size + 1);
    for (const terminate of [...openPolls]) terminate();
    const ready = takeUpdates(body);
    const timeoutS = typeof body.timeout === 'number' ? body.timeout : 0;
    if (ready.length > 0 || timeoutS <= 0) return fetched(ready);
    return new Promise((resolve) => {
      const end = (answer: () => Answer) => {
        clearTimeout(timer);
        waiters.delete(check);
        openPolls.delete(terminate);
        response.off('close', onClose);
        resolve(answer());
      };
      const finish = () => end(() => fetched(takeUpdates(body)));
      const terminate = () =>
        end(() =>
          fail(
            409,
            'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running',
          ),
        );
      const check = () => {
        if (takeUpdates(body).length > 0) finish();
      };
      // The client went away (stopped or killed): nothing reaches it, so nothing counts as fetched.
      const onClose = () => end(() => ok([]));
      const timer = setTimeout(finish, timeoutS * 1000);
      waiters.add(check);
      openPolls.add(terminate);
      // The response, not the request: a request emits `close` once its body is read.
      response.once('close', onClose);
    });
  }

  function sendMessage(body: Json): Answer {
    if (body.chat_id === undefined) return fail(400, 'Bad Request: chat_id is empty');
    const text = typeof body.text === 'string' ? body.text : '';
    if (text.trim() === '') return fail(400, 'Bad Request: message text is empty');
    if (text.length > TEXT_LIMIT) return fail(400, 'Bad Request: message is too long');
    const thread = typeof body.message_thread_id === 'number' ? body.message_thread_id : undefined;
    const message = {
      message_id: nextMessageId++,
      from: botUser,
      chat: chats.get(String(body.chat_id)) ?? { id: body.chat_id, type: 'private' },
      date: Math.floor(Date.now() / 1000),
      text,
      ...(thread === undefined ? {} : { message_thread_id: thread, is_topic_message: true }),
    };
    sent.push({ body, message, at: Date.now() });
    texts.set(`${body.chat_id}:${message.message_id}`, text);
    return ok(message);
  }

  function sendMedia(method: MediaMethod, body: Json, files: Record<string, UploadedFile>): Answer {
    if (body.chat_id === undefined) return fail(400, 'Bad Request: chat_id is empty');
    const field = MEDIA_FIELDS[method];
    const value = body[field];
    const attached = typeof value === 'string' && value.startsWith('attach://') ? value.slice(9) : field;
    const file = files[attached];
    if (file === undefined && (typeof value !== 'string' || value === ''))
      return fail(400, `Bad Request: there is no ${field} in the request`);
    if (file !== undefined && file.bytes.length === 0)
      return fail(400, 'Bad Request: file must be non-empty');
    const message = {
      message_id: nextMessageId++,
      from: botUser,
      chat: chats.get(String(body.chat_id)) ?? { id: body.chat_id, type: 'private' },
      date: Math.floor(Date.now() / 1000),
      [field]:
        field === 'photo'
          ? [{ file_id: `photo-${nextMessageId}`, width: 1, height: 1 }]
          : { file_id: `${field}-${nextMessageId}` },
    };
    media.push({
      method,
      body,
      ...(file === undefined ? { url: value as string } : { file }),
      message,
      at: Date.now(),
    });
    return ok(message);
  }

  function editMessageText(body: Json): Answer {
    const key = `${body.chat_id}:${body.message_id}`;
    const current = texts.get(key);
    if (current === undefined) return fail(400, 'Bad Request: message to edit not found');
    const text = typeof body.text === 'string' ? body.text : '';
    if (text.trim() === '') return fail(400, 'Bad Request: message text is empty');
    if (text.length > TEXT_LIMIT) return fail(400, 'Bad Request: MESSAGE_TOO_LONG');
    if (text === current) {
      return fail(
        400,
        'Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message',
      );
    }
    texts.set(key, text);
    edits.push({ chatId: String(body.chat_id), messageId: Number(body.message_id), text, at: Date.now() });
    return ok({
      ...(sent.find((entry) => `${entry.body.chat_id}:${entry.message.message_id}` === key)?.message ?? {}),
      text,
    });
  }

  function sendChatAction(body: Json): Answer {
    if (body.chat_id === undefined) return fail(400, 'Bad Request: chat_id is empty');
    if (typeof body.action !== 'string' || !CHAT_ACTIONS.has(body.action))
      return fail(400, 'Bad Request: wrong parameter action in request');
    return ok(true);
  }

  function answer(
    method: string,
    body: Json,
    uploads: Record<string, UploadedFile>,
    response: ServerResponse,
  ): Promise<Answer> | Answer {
    switch (method) {
      case 'sendPhoto':
      case 'sendDocument':
      case 'sendAudio':
        return sendMedia(method, body, uploads);
      case 'getMe':
        return ok(botUser);
      case 'deleteWebhook':
        webhook = null;
        if (body.drop_pending_updates === true) queue = [];
        return ok(true);
      case 'setWebhook':
        if (typeof body.url !== 'string' || body.url === '')
          return fail(400, 'Bad Request: bad webhook: an HTTPS URL must be provided');
        webhook = {
          url: body.url,
          ...(body.secret_token === undefined ? {} : { secret_token: body.secret_token }),
          ...(body.allowed_updates === undefined ? {} : { allowed_updates: body.allowed_updates }),
        };
        return ok(true);
      case 'getWebhookInfo':
        return ok({
          url: webhook?.url ?? '',
          has_custom_certificate: false,
          pending_update_count: queue.length,
          ...(webhookError === null
            ? {}
            : { last_error_date: webhookError.date, last_error_message: webhookError.message }),
        });
      case 'getUpdates':
        return getUpdates(body, response);
      case 'sendMessage':
        return sendMessage(body);
      case 'editMessageText':
        return editMessageText(body);
      case 'sendChatAction':
        return sendChatAction(body);
      case 'getFile': {
        const stored = files.get(String(body.file_id));
        if (stored === undefined) return fail(400, 'Bad Request: invalid file_id');
        if (stored.file.file_size > (options.downloadLimitBytes ?? DOWNLOAD_LIMIT_BYTES))
          return fail(400, 'Bad Request: file is too big');
        return ok(stored.file);
      }
      default:
        return fail(404, 'Not Found: method not found');
    }
  }

  function injectedFailure(method: string): FakeTelegramFailure | undefined {
    const lasting = down.get(method);
    if (lasting !== undefined) return lasting;
    const pending = failures.get(method);
    const failure = pending?.shift();
    if (pending?.length === 0) failures.delete(method);
    return failure;
  }

  /** `GET /file/bot<token>/<file_path>`: the bytes, in chunks, so that a client may leave midway. */
  function serveFile(path: string, response: ServerResponse): void {
    const match = /^\/file\/bot([^/]+)\/(.+)$/.exec(path);
    const stored =
      match?.[1] === token
        ? [...files.values()].find((entry) => entry.file.file_path === match[2])
        : undefined;
    if (stored === undefined) {
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ ok: false, error_code: 404, description: 'Not Found' }));
      return;
    }
    const download: FakeTelegramDownload = { path, bytesSent: 0, state: 'sending' };
    downloads.push(download);
    response.writeHead(200, {
      'content-type': 'application/octet-stream',
      'content-length': String(stored.content.length),
    });
    const CHUNK = 64 * 1024;
    const write = () => {
      while (download.bytesSent < stored.content.length) {
        const chunk = stored.content.subarray(download.bytesSent, download.bytesSent + CHUNK);
        download.bytesSent += chunk.length;
        if (!response.write(chunk)) return;
      }
      download.state = 'complete';
      response.end();
    };
    response.on('drain', write);
    response.on('close', () => {
      if (download.state === 'sending') download.state = 'aborted';
    });
    write();
  }

  const server: Server = createServer(async (request, response) => {
    if (request.method === 'GET' && request.url?.startsWith('/file/')) {
      serveFile(new URL(request.url, 'http://fake').pathname, response);
      return;
    }
    // Read before the body: limits count a request when it reaches the server.
    const arrivedAt = Date.now();
    // Uploads come as multipart/form-data, every other call as JSON (grammY's choice, as the Bot API allows).
    const boundary = multipartBoundary(request.headers['content-type']);
    const multipart = boundary === undefined ? null : parseMultipart(await readRawBody(request), boundary);
    const body =
      multipart === null ? ((await readJsonBody(request)) ?? {}) : multipartFields(multipart.fields);
    const uploads = multipart?.files ?? {};
    const path = new URL(request.url ?? '/', 'http://fake').pathname;
    const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(path);
    const method = match?.[2] ?? '';
    const call: RecordedTelegramCall = { method, path, body, status: null, at: arrivedAt };
    calls.push(call);
    const send = ({ status, body: payload }: Answer) => {
      call.status = status;
      if (response.destroyed) return;
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(payload));
    };
    if (match === null) return send(fail(404, 'Not Found'));
    if (match[1] !== token) return send(fail(401, 'Unauthorized'));
    const failure = injectedFailure(method);
    if (failure !== undefined) {
      if ('hang' in failure) {
        hung.add(response);
        return;
      }
      if (failure.status === 429 && 'retryAfterS' in failure) {
        return send(
          fail(429, `Too Many Requests: retry after ${failure.retryAfterS}`, {
            retry_after: failure.retryAfterS,
          }),
        );
      }
      const description =
        ('description' in failure ? failure.description : undefined) ?? DESCRIPTIONS[failure.status];
      return send(fail(failure.status, description ?? 'Error'));
    }
    const limited = RATE_LIMITED_METHODS.has(method) ? overRateLimit(body, arrivedAt) : null;
    send(limited ?? (await answer(method, body, uploads, response)));
  });
  server.keepAliveTimeout = 1;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    token,
    botUser,
    calls,
    callsOf: (method) => calls.filter((call) => call.method === method),
    sentMessages: () => [...sent],
    sentMedia: () => [...media],
    deliveredTo: (chatId) =>
      sent
        .filter((entry) => String(entry.body.chat_id) === String(chatId))
        .map((entry) => entry.message.text),
    rateLimitViolations: () => limiter.violations(),
    edits: () => [...edits],
    textOf: (chatId, messageId) => texts.get(`${chatId}:${messageId}`),
    webhook: () => webhook,
    setWebhookError(message) {
      webhookError = message === null ? null : { message, date: Math.floor(Date.now() / 1000) };
    },
    confirmedOffset: () => confirmed,
    pendingUpdates: () => queue.filter((update) => update.update_id >= confirmed),
    maxOpenPolls: () => maxOpenPolls,
    fetchCounts: () => new Map(fetchCounts),
    message(fields) {
      const message: Json = { message_id: nextMessageId++, date: Math.floor(Date.now() / 1000), ...fields };
      if (message.chat?.id !== undefined) chats.set(String(message.chat.id), message.chat);
      return message;
    },
    pushUpdate(update) {
      const full = withUpdateId(update);
      rememberChat(full);
      queue.push(full);
      for (const wake of [...waiters]) wake();
      return full;
    },
    async deliverWebhook(target, update, secretToken) {
      let payload = update;
      if (typeof update !== 'string') {
        payload = withUpdateId(update);
        rememberChat(payload);
      }
      const response = await fetch(target, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(secretToken === undefined ? {} : { 'x-telegram-bot-api-secret-token': secretToken }),
        },
        body: typeof payload === 'string' ? payload : JSON.stringify(payload),
      });
      const text = await response.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {}
      return { status: response.status, headers: response.headers, body };
    },
    addFile(content, fileName) {
      const n = files.size + 1;
      const file: FakeTelegramFile = {
        file_id: `BQACAgIAAxkBAAI${n}`,
        file_unique_id: `AgAD${n}`,
        file_size: content.length,
        file_path: `documents/file_${n}${fileName === undefined ? '' : `_${fileName}`}`,
      };
      files.set(file.file_id, { file, content });
      return file;
    },
    fileDownloads: () => downloads.map((download) => ({ ...download })),
    failAll(method, failure) {
      if (failure === null) down.delete(method);
      else down.set(method, failure);
    },
    failNext(method, count, failure) {
      failures.set(method, [
        ...(failures.get(method) ?? []),
        ...Array<FakeTelegramFailure>(count).fill(failure),
      ]);
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
