import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';
import { type UploadedFile, multipartBoundary, parseMultipart } from './multipart-body.js';
import { type FakeRateLimit, createFakeRateLimiter } from './fake-rate-limits.js';

/**
 * A fake Discord for tests: the REST API under `/api/v10/…` on node:http and the gateway as a
 * `ws` WebSocket server on the same port, both on 127.0.0.1. Point discord.js at it with
 * `rest: { api: fake.url }` (the channel's `api_url`). Login fetches `GET /gateway/bot`, which
 * names this server's `/gateway`; the fake answers HELLO, IDENTIFY → READY (+ GUILD_CREATE for
 * known guilds), heartbeats, RESUME → RESUMED, and then whatever dispatches the test sends.
 */

/** A Discord user as the API returns it. */
export interface FakeDiscordUser {
  id: string;
  username: string;
  global_name?: string | null;
  bot?: boolean;
}

export interface FakeDiscordOptions {
  /** The bot token REST (`Authorization: Bot …`) and IDENTIFY must carry. Default: `fake-discord-token`. */
  token?: string;
  /** The bot's own user, sent in READY. Default: id `1100000000000000001`, username `switchboard`. */
  botUser?: FakeDiscordUser;
  /** HELLO's `heartbeat_interval`. Default: 41 250 ms (Discord's). */
  heartbeatIntervalMs?: number;
  /**
   * Limits on posting and editing a channel's messages (`DISCORD_RATE_LIMITS`): answers carry the
   * route's `X-RateLimit-*` headers, and a call past the limit gets 429 with `retry_after`. Default: none.
   */
  rateLimits?: FakeDiscordRateLimits;
}

/** Limits on posting and editing messages; a limit left out is not enforced. */
export interface FakeDiscordRateLimits {
  /** Every post or edit in one channel (one bucket, shared by sends and edits as the pacer's is). */
  perChannel?: FakeRateLimit;
  /** See `fake-rate-limits.ts`. Default: `DEFAULT_TOLERANCE_MS`. */
  toleranceMs?: number;
}

/** The bucket Discord answers for a channel's messages: 5 per 5 s. */
export const DISCORD_RATE_LIMITS: FakeDiscordRateLimits = Object.freeze({
  perChannel: { limit: 5, perMs: 5000 },
});

/** One REST call the gateway made. */
export interface RecordedDiscordRequest {
  method: string;
  /** Path below the API root, e.g. `/channels/42/messages`. */
  path: string;
  authorization: string | undefined;
  body: unknown;
  /** Milliseconds since the epoch at which it arrived. */
  at: number;
}

/**
 * A message the bot posted: the channel it went to, the JSON body it sent (a multipart request's
 * `payload_json`), and the files it uploaded (its `files[n]` parts, in order).
 */
export interface SentDiscordMessage {
  channelId: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary request shapes
  body: Record<string, any>;
  files: UploadedFile[];
}

/** A `PATCH /channels/:id/messages/:id` the fake applied. */
export interface DiscordEdit {
  channelId: string;
  messageId: string;
  content: string;
  /** Milliseconds since the epoch at which it arrived. */
  at: number;
}

/** What the next REST calls answer instead of succeeding (see `failNext`). */
export type FakeDiscordFailure =
  | { status: 429; retryAfterMs: number; global?: boolean }
  | { status: number }
  | { hang: true };

/** A guild for GUILD_CREATE: ids are enough, the fake fills in the rest. */
export interface FakeGuild {
  id: string;
  name?: string;
  /** Text channels (type 0 unless given). */
  channels: { id: string; name?: string; type?: number }[];
  /** Active threads: `parent_id` is the channel they hang off. */
  threads?: { id: string; parent_id: string; name?: string }[];
}

/** A MESSAGE_CREATE payload; omitted fields get Discord's defaults (`id` a fresh snowflake). */
export type FakeMessageInput = { channel_id: string; author: FakeDiscordUser } & Record<string, unknown>;

export interface FakeDiscord {
  /** The API root to configure as the channel's `api_url` (`http://127.0.0.1:<port>/api`). */
  url: string;
  token: string;
  botUser: FakeDiscordUser;
  /** Every REST call, in arrival order. */
  requests: RecordedDiscordRequest[];
  /** The `POST /channels/:id/messages` calls that succeeded, in order. */
  sentMessages(): SentDiscordMessage[];
  /** Posts and edits answered 429 for exceeding `rateLimits` (injected failures not included). */
  rateLimitViolations(): number;
  /** The `PATCH /channels/:id/messages/:id` calls that succeeded, in order. */
  edits(): DiscordEdit[];
  /** The `POST /channels/:id/typing` calls that succeeded, in order. */
  typings(): { channelId: string; at: number }[];
  /**
   * Dispatches MESSAGE_UPDATE for an edit of `message` (a MESSAGE_CREATE payload `messageCreate`
   * returned) to `content`, with an `edited_timestamp`; returns the payload sent.
   */
  messageUpdate(message: Record<string, unknown>, content: string): Record<string, unknown>;
  /** Dispatches MESSAGE_DELETE of `message` (a MESSAGE_CREATE payload): its id, channel and guild only, as Discord does. */
  messageDelete(message: Record<string, unknown>): void;
  /** Dispatches MESSAGE_REACTION_ADD (or, `removed`, MESSAGE_REACTION_REMOVE) of a Unicode emoji. */
  reaction(
    message: Record<string, unknown>,
    user: FakeDiscordUser,
    emoji: string,
    options?: { removed?: boolean },
  ): void;
  /** The content a message the bot posted shows now (after its edits); undefined if unknown. */
  contentOf(channelId: string, messageId: string): string | undefined;
  /** Gateway counters: sockets opened, IDENTIFYs and RESUMEs received. */
  stats: { connections: number; identifies: number; resumes: number };
  /**
   * The most gateway sockets ever open at the same moment: more than 1 means two clients held
   * the token's session at once.
   */
  maxOpenSockets(): number;
  /** Whether a session is identified or resumed on an open socket, so dispatches can be sent. */
  connected(): boolean;
  /** Adds a guild: sent after READY on every identify, and at once when a session is live. */
  guildCreate(guild: FakeGuild): void;
  /** Dispatches MESSAGE_CREATE and returns the full payload sent. */
  messageCreate(message: FakeMessageInput): Record<string, unknown>;
  /** Dispatches any event (`t`) with data `d` on the live session. */
  dispatch(type: string, data: unknown): void;
  /** Sends a raw text frame, e.g. a malformed payload. */
  sendRaw(frame: string): void;
  /** The next `count` REST calls answer `failure` instead (429 with Retry-After, a status, or never). */
  failNext(count: number, failure: FakeDiscordFailure): void;
  /**
   * Closes the live gateway socket with `code` (default 4000, which clients resume after). With
   * `holdReconnect`, new sockets get no HELLO until `releaseReconnect()`, so a test can observe
   * the disconnected state for as long as it likes.
   */
  disconnect(options?: { code?: number; holdReconnect?: boolean }): void;
  /** New sockets get no HELLO until `releaseReconnect()`: a client's login, and its start, wait. */
  holdConnections(): void;
  releaseReconnect(): void;
  /**
   * An attachment, as a message's `attachments[]` carries it (pass it to `messageCreate`); its
   * bytes are served at its `url`, as Discord's CDN does, without credentials.
   */
  addAttachment(content: Buffer, fields: { filename: string; content_type: string }): FakeDiscordAttachment;
  /** Every GET of an attachment, with the Authorization header it carried. */
  attachmentRequests(): Array<{ path: string; authorization: string | undefined }>;
  close(): Promise<void>;
}

/** A Discord attachment object. */
export interface FakeDiscordAttachment {
  id: string;
  filename: string;
  content_type: string;
  size: number;
  url: string;
  proxy_url: string;
}

const DEFAULT_TOKEN = 'fake-discord-token';
const DEFAULT_BOT_USER: FakeDiscordUser = { id: '1100000000000000001', username: 'switchboard', bot: true };
const DEFAULT_HEARTBEAT_INTERVAL_MS = 41_250;
const API_PREFIX = '/api/v10';

const Op = {
  Dispatch: 0,
  Heartbeat: 1,
  Identify: 2,
  Resume: 6,
  InvalidSession: 9,
  Hello: 10,
  HeartbeatAck: 11,
};

/** Starts the fake on 127.0.0.1, port 0. */
export async function startFakeDiscord(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
  const token = options.token ?? DEFAULT_TOKEN;
  const botUser = { ...(options.botUser ?? DEFAULT_BOT_USER), bot: true };
  const heartbeatIntervalMs = options.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS;

  const requests: RecordedDiscordRequest[] = [];
  const sent: SentDiscordMessage[] = [];
  const edits: DiscordEdit[] = [];
  const typings: { channelId: string; at: number }[] = [];
  /** The content of each message the bot posted, by `<channel id>/<message id>`. */
  const contents = new Map<string, string>();
  const guilds = new Map<string, FakeGuild>();
  const failures: FakeDiscordFailure[] = [];
  const hung = new Set<ServerResponse>();
  const stats = { connections: 0, identifies: 0, resumes: 0 };
  let snowflake = 1_300_000_000_000_000_000n;
  const nextId = () => String(++snowflake);
  const rateLimits = options.rateLimits ?? {};
  const limiter = createFakeRateLimiter(rateLimits.toleranceMs);

  /**
   * Counts a post or an edit into `channelId` against its bucket: the route's `X-RateLimit-*`
   * headers (as @discordjs/rest reads them to queue), and whether the call went past the limit.
   */
  function channelBucket(
    channelId: string,
    arrivedAt: number,
  ): { headers: Record<string, string>; limited: boolean } {
    const limit = rateLimits.perChannel;
    if (limit === undefined) return { headers: {}, limited: false };
    const bucket = [`channel:${channelId}`, limit] as const;
    const waitMs = limiter.admit([bucket], arrivedAt);
    const limited = waitMs > 0;
    const { remaining, fullInMs } = limiter.state(bucket, arrivedAt);
    const resetAfterS = (fullInMs / 1000).toFixed(3);
    return {
      limited,
      headers: {
        'x-ratelimit-limit': String(limit.limit),
        'x-ratelimit-remaining': String(remaining),
        'x-ratelimit-reset-after': resetAfterS,
        'x-ratelimit-reset': ((arrivedAt + fullInMs) / 1000).toFixed(3),
        'x-ratelimit-bucket': 'fake-channel-messages',
        ...(limited ? { 'retry-after': (waitMs / 1000).toFixed(3), 'x-ratelimit-scope': 'user' } : {}),
      },
    };
  }

  /**
   * Counts a post or an edit into `channelId` against the channel's bucket; past the limit it
   * answers 429 and returns null, else the headers the answer carries.
   */
  function admitted(
    response: ServerResponse,
    channelId: string,
    arrivedAt: number,
  ): Record<string, string> | null {
    const { headers, limited } = channelBucket(channelId, arrivedAt);
    if (!limited) return headers;
    const retryAfter = Number(headers['retry-after']);
    json(
      response,
      429,
      { message: 'You are being rate limited.', retry_after: retryAfter, global: false },
      headers,
    );
    return null;
  }

  // The one gateway session: Discord keeps it across sockets so that a client can resume it.
  let session: { id: string; seq: number } | null = null;
  let live: WebSocket | null = null;
  let openSockets = 0;
  let maxOpenSockets = 0;
  let holding = false;
  const held: WebSocket[] = [];

  const server: Server = createServer((request, response) => {
    void handleRest(request, response);
  });
  const wss = new WebSocketServer({ server, path: '/gateway' });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const gatewayUrl = `ws://127.0.0.1:${port}/gateway`;

  /**
   * The JSON body of a call; of a multipart one (a message with files) its `payload_json`, with
   * the `files[n]` parts beside it, as Discord reads uploads.
   */
  async function readBody(request: IncomingMessage): Promise<{ body: unknown; files: UploadedFile[] }> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const boundary = multipartBoundary(request.headers['content-type']);
    if (boundary !== undefined) {
      const { fields, files } = parseMultipart(raw, boundary);
      const numbered = Object.entries(files)
        .map(([name, file]) => ({ index: Number(/^files\[(\d+)\]$/.exec(name)?.[1] ?? Number.NaN), file }))
        .filter(({ index }) => !Number.isNaN(index))
        .sort((a, b) => a.index - b.index)
        .map(({ file }) => file);
      return { body: parseJson(fields.payload_json ?? ''), files: numbered };
    }
    return { body: parseJson(raw.toString()), files: [] };
  }

  function parseJson(text: string): unknown {
    if (text === '') return null;
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }

  function json(
    response: ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ) {
    response.writeHead(status, { 'content-type': 'application/json', ...headers });
    response.end(JSON.stringify(body));
  }

  const attachments = new Map<string, Buffer>();
  const attachmentRequests: Array<{ path: string; authorization: string | undefined }> = [];

  async function handleRest(request: IncomingMessage, response: ServerResponse): Promise<void> {
    // Read before the body: limits count a request when it reaches the server.
    const arrivedAt = Date.now();
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    if (request.method === 'GET' && url.pathname.startsWith('/attachments/')) {
      attachmentRequests.push({ path: url.pathname, authorization: request.headers.authorization });
      const content = attachments.get(url.pathname);
      if (content === undefined) return json(response, 404, { message: '404: Not Found', code: 0 });
      response.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-length': String(content.length),
      });
      response.end(content);
      return;
    }
    const path = url.pathname.startsWith(API_PREFIX) ? url.pathname.slice(API_PREFIX.length) : url.pathname;
    const method = request.method ?? 'GET';
    const { body, files } = await readBody(request);
    requests.push({ method, path, authorization: request.headers.authorization, body, at: arrivedAt });

    const failure = failures.shift();
    if (failure !== undefined) {
      if ('hang' in failure) {
        hung.add(response);
        return;
      }
      if (failure.status === 429 && 'retryAfterMs' in failure) {
        const seconds = failure.retryAfterMs / 1000;
        // Discord sends both: the headers drive @discordjs/rest's queue, the body is for humans.
        json(
          response,
          429,
          { message: 'You are being rate limited.', retry_after: seconds, global: failure.global ?? false },
          {
            'retry-after': String(seconds),
            'x-ratelimit-limit': '5',
            'x-ratelimit-remaining': '0',
            'x-ratelimit-reset-after': String(seconds),
            'x-ratelimit-bucket': 'fake-bucket',
            'x-ratelimit-scope': failure.global ? 'global' : 'user',
            ...(failure.global ? { 'x-ratelimit-global': 'true' } : {}),
          },
        );
        return;
      }
      json(response, failure.status, { message: `fake failure ${failure.status}`, code: 0 });
      return;
    }

    if (request.headers.authorization !== `Bot ${token}`) {
      json(response, 401, { message: '401: Unauthorized', code: 0 });
      return;
    }
    if (method === 'GET' && path === '/gateway/bot') {
      json(response, 200, {
        url: gatewayUrl,
        shards: 1,
        session_start_limit: { total: 1000, remaining: 999, reset_after: 14_400_000, max_concurrency: 1 },
      });
      return;
    }
    if (method === 'GET' && path === '/users/@me') {
      json(response, 200, botUser);
      return;
    }
    const channelMessages = /^\/channels\/(\d+)\/messages$/.exec(path);
    if (method === 'POST' && channelMessages?.[1] !== undefined) {
      const channelId = channelMessages[1];
      const headers = admitted(response, channelId, arrivedAt);
      if (headers === null) return;
      const posted = (body ?? {}) as Record<string, unknown>;
      if (String(posted.content ?? '') === '' && files.length === 0) {
        json(response, 400, { message: 'Cannot send an empty message', code: 50006 }, headers);
        return;
      }
      sent.push({ channelId, body: posted, files });
      const id = nextId();
      contents.set(`${channelId}/${id}`, String(posted.content ?? ''));
      json(response, 200, fullMessage({ ...posted, id, channel_id: channelId, author: botUser }), headers);
      return;
    }
    const channelTyping = /^\/channels\/(\d+)\/typing$/.exec(path);
    if (method === 'POST' && channelTyping?.[1] !== undefined) {
      typings.push({ channelId: channelTyping[1], at: arrivedAt });
      response.writeHead(204);
      response.end();
      return;
    }
    const channelMessage = /^\/channels\/(\d+)\/messages\/(\d+)$/.exec(path);
    if (method === 'PATCH' && channelMessage?.[1] !== undefined && channelMessage[2] !== undefined) {
      const [, channelId, messageId] = channelMessage;
      const headers = admitted(response, channelId, arrivedAt);
      if (headers === null) return;
      const key = `${channelId}/${messageId}`;
      if (!contents.has(key)) {
        json(response, 404, { message: 'Unknown Message', code: 10008 }, headers);
        return;
      }
      const content = String((body as Record<string, unknown> | undefined)?.content ?? '');
      contents.set(key, content);
      edits.push({ channelId, messageId, content, at: Date.now() });
      json(
        response,
        200,
        fullMessage({ content, id: messageId, channel_id: channelId, author: botUser }),
        headers,
      );
      return;
    }
    json(response, 404, { message: '404: Not Found', code: 0 });
  }

  function fullMessage(fields: Record<string, unknown>): Record<string, unknown> {
    return {
      type: fields.message_reference === undefined ? 0 : 19,
      content: '',
      timestamp: new Date().toISOString(),
      edited_timestamp: null,
      tts: false,
      mention_everyone: false,
      mentions: [],
      mention_roles: [],
      attachments: [],
      embeds: [],
      pinned: false,
      flags: 0,
      components: [],
      ...fields,
    };
  }

  function fullGuild(guild: FakeGuild): Record<string, unknown> {
    return {
      id: guild.id,
      name: guild.name ?? `guild ${guild.id}`,
      icon: null,
      owner_id: '1',
      unavailable: false,
      member_count: 2,
      large: false,
      features: [],
      emojis: [],
      stickers: [],
      members: [],
      presences: [],
      voice_states: [],
      stage_instances: [],
      guild_scheduled_events: [],
      // Every guild has an @everyone role whose id is the guild's.
      roles: [
        {
          id: guild.id,
          name: '@everyone',
          color: 0,
          hoist: false,
          position: 0,
          permissions: '0',
          managed: false,
          mentionable: false,
          flags: 0,
        },
      ],
      channels: guild.channels.map((channel, position) => ({
        id: channel.id,
        guild_id: guild.id,
        type: channel.type ?? 0,
        name: channel.name ?? `channel-${channel.id}`,
        position,
        permission_overwrites: [],
        parent_id: null,
        nsfw: false,
      })),
      threads: (guild.threads ?? []).map((thread) => ({
        id: thread.id,
        guild_id: guild.id,
        parent_id: thread.parent_id,
        type: 11,
        name: thread.name ?? `thread-${thread.id}`,
        owner_id: '1',
        message_count: 0,
        member_count: 1,
        thread_metadata: {
          archived: false,
          auto_archive_duration: 1440,
          archive_timestamp: new Date().toISOString(),
          locked: false,
        },
      })),
    };
  }

  function send(socket: WebSocket, payload: unknown) {
    socket.send(JSON.stringify(payload));
  }

  function dispatchOn(socket: WebSocket, type: string, data: unknown) {
    if (session === null) throw new Error('fake discord: no gateway session');
    session.seq += 1;
    send(socket, { op: Op.Dispatch, t: type, s: session.seq, d: data });
  }

  function hello(socket: WebSocket) {
    send(socket, { op: Op.Hello, d: { heartbeat_interval: heartbeatIntervalMs } });
  }

  function onFrame(socket: WebSocket, frame: string) {
    // biome-ignore lint/suspicious/noExplicitAny: gateway payloads are arbitrary JSON
    let payload: any;
    try {
      payload = JSON.parse(frame);
    } catch {
      socket.close(4002, 'Error while decoding payload.');
      return;
    }
    switch (payload?.op) {
      case Op.Heartbeat:
        send(socket, { op: Op.HeartbeatAck });
        return;
      case Op.Identify: {
        stats.identifies += 1;
        if (payload.d?.token !== token) {
          socket.close(4004, 'Authentication failed.');
          return;
        }
        session = { id: randomUUID(), seq: 0 };
        live = socket;
        dispatchOn(socket, 'READY', {
          v: 10,
          user: botUser,
          guilds: [...guilds.keys()].map((id) => ({ id, unavailable: true })),
          session_id: session.id,
          resume_gateway_url: gatewayUrl,
          shard: [0, 1],
          application: { id: botUser.id, flags: 0 },
        });
        for (const guild of guilds.values()) dispatchOn(socket, 'GUILD_CREATE', fullGuild(guild));
        return;
      }
      case Op.Resume:
        stats.resumes += 1;
        if (payload.d?.token !== token || session === null || payload.d?.session_id !== session.id) {
          send(socket, { op: Op.InvalidSession, d: false });
          return;
        }
        live = socket;
        dispatchOn(socket, 'RESUMED', {});
        return;
      default:
        // Presence updates, voice state, request guild members…: nothing to answer.
        return;
    }
  }

  wss.on('connection', (socket) => {
    stats.connections += 1;
    openSockets += 1;
    maxOpenSockets = Math.max(maxOpenSockets, openSockets);
    socket.on('message', (data) => onFrame(socket, data.toString()));
    socket.on('close', () => {
      openSockets -= 1;
      if (live === socket) live = null;
    });
    if (holding) held.push(socket);
    else hello(socket);
  });

  function liveSocket(): WebSocket {
    if (live === null) throw new Error('fake discord: no live gateway session');
    return live;
  }

  return {
    url: `http://127.0.0.1:${port}/api`,
    token,
    botUser,
    requests,
    stats,
    sentMessages: () => [...sent],
    rateLimitViolations: () => limiter.violations(),
    edits: () => [...edits],
    contentOf: (channelId, messageId) => contents.get(`${channelId}/${messageId}`),
    connected: () => live !== null,
    maxOpenSockets: () => maxOpenSockets,
    guildCreate(guild) {
      guilds.set(guild.id, guild);
      if (live !== null) dispatchOn(live, 'GUILD_CREATE', fullGuild(guild));
    },
    addAttachment(content, fields) {
      const id = nextId();
      const path = `/attachments/1200000000000000001/${id}/${encodeURIComponent(fields.filename)}`;
      attachments.set(path, content);
      const url = `http://127.0.0.1:${port}${path}`;
      return { id, ...fields, size: content.length, url, proxy_url: url };
    },
    attachmentRequests: () => [...attachmentRequests],
    messageCreate(message) {
      const payload = fullMessage({ id: nextId(), ...message });
      dispatchOn(liveSocket(), 'MESSAGE_CREATE', payload);
      return payload;
    },
    dispatch(type, data) {
      dispatchOn(liveSocket(), type, data);
    },
    typings: () => [...typings],
    messageUpdate(message, content) {
      const payload = { ...message, content, edited_timestamp: new Date().toISOString() };
      dispatchOn(liveSocket(), 'MESSAGE_UPDATE', payload);
      return payload;
    },
    messageDelete(message) {
      dispatchOn(liveSocket(), 'MESSAGE_DELETE', {
        id: message.id,
        channel_id: message.channel_id,
        ...(message.guild_id === undefined ? {} : { guild_id: message.guild_id }),
      });
    },
    reaction(message, user, emoji, { removed = false } = {}) {
      dispatchOn(liveSocket(), removed ? 'MESSAGE_REACTION_REMOVE' : 'MESSAGE_REACTION_ADD', {
        user_id: user.id,
        channel_id: message.channel_id,
        message_id: message.id,
        ...(message.guild_id === undefined ? {} : { guild_id: message.guild_id }),
        emoji: { id: null, name: emoji },
        ...(removed ? {} : { type: 0, burst: false }),
      });
    },
    sendRaw(frame) {
      liveSocket().send(frame);
    },
    failNext(count, failure) {
      for (let i = 0; i < count; i++) failures.push(failure);
    },
    disconnect({ code = 4000, holdReconnect = false } = {}) {
      holding = holdReconnect;
      const socket = liveSocket();
      live = null;
      socket.close(code, 'fake disconnect');
    },
    holdConnections() {
      holding = true;
    },
    releaseReconnect() {
      holding = false;
      for (const socket of held.splice(0)) hello(socket);
    },
    async close() {
      for (const response of hung) response.destroy();
      for (const socket of wss.clients) socket.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
