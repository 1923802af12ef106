import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CryptoKey, type JWK, SignJWT, exportJWK, generateKeyPair } from 'jose';
import { type FakeRateLimit, createFakeRateLimiter } from './fake-rate-limits.js';

// A fake of the Microsoft side of a Teams bot, after the Bot Framework REST reference: the
// Bot Connector's OpenID metadata and signing keys (`/v1/.well-known/openidconfiguration`,
// `/v1/.well-known/keys`), the Entra client-credentials endpoint (`/<tenant>/oauth2/v2.0/token`),
// and a Bot Connector service (`/smba/v3/conversations/…`) that records replies and edits —
// texts, and inline images as activity attachments (an image type, at an https `contentUrl` or a
// `data:` URI; a request past about 256 KB is answered 413 `MessageSizeTooBig`). It serves files
// people send: inline images at `/smba/v3/attachments/<id>/views/original` to the bot's token,
// and shared files at a pre-authenticated download link (`/files/<id>?tempauth=…`, as
// SharePoint's), recording each file request. It
// signs the activities it posts to a bot as the connector does (RS256, issuer
// `https://api.botframework.com`, audience the app id, a `serviceurl` claim — all lower case in
// the tokens, whatever Microsoft's prose writes).

/** The issuer of the Bot Connector's tokens. */
export const BOT_FRAMEWORK_ISSUER = 'https://api.botframework.com';

/** One call to the fake's connector service. */
export interface TeamsConnectorCall {
  method: 'POST' | 'PUT';
  conversationId: string;
  /** The activity replied to (POST) or updated (PUT); undefined for a plain send. */
  activityId: string | undefined;
  /** The bearer token presented. */
  token: string | undefined;
  body: Record<string, unknown>;
  /** Milliseconds since the epoch at which it arrived. */
  at: number;
}

/** An attachment of a posted activity, as the bot sent it. */
export interface TeamsAttachment {
  contentType: string;
  contentUrl?: string;
  name?: string;
}

/** An activity the fake accepted (a successful POST), in a conversation. */
export interface TeamsPostedActivity {
  conversationId: string;
  text?: string;
  attachments?: TeamsAttachment[];
}

/** An update (PUT) the fake applied. */
export interface TeamsEdit {
  conversationId: string;
  activityId: string;
  text: string;
  at: number;
}

/** A request for a file the fake serves. */
export interface TeamsFileRequest {
  path: string;
  /** The Authorization header sent, if any. */
  authorization: string | undefined;
  status: number;
}

/** How the next connector calls fail (see `failNext`). */
export type TeamsFailure =
  | { kind: 'rate_limited'; retryAfterSec: number }
  | { kind: 'http_status'; status: number }
  /** Never answers (until `close`). */
  | { kind: 'hang' };

export interface FakeTeamsOptions {
  /** Default: `00000000-0000-0000-0000-00000000b07`. */
  appId?: string;
  /** The client secret the token endpoint accepts. Default: `teams-app-password`. */
  appPassword?: string;
  /** The lifetime of issued tokens, in seconds (`expires_in`). Default: 3600. */
  tokenLifetimeSec?: number;
  /** Limits on posts and updates into one conversation; a call past one is answered 429. */
  perConversation?: FakeRateLimit;
  /** See `fake-rate-limits.ts`. */
  toleranceMs?: number;
}

/** How `post` signs the activity it sends. */
export interface PostOptions {
  /** `forged`: signed with a key the metadata does not publish; `none`: no Authorization header. */
  signature?: 'valid' | 'forged' | 'none';
  /** The token's `serviceurl` claim. Default: the activity's. */
  serviceUrlClaim?: string;
  /** The token's audience. Default: the app id. */
  audience?: string;
}

export interface PostAnswer {
  status: number;
  headers: Headers;
  /** Parsed JSON, the text when it is not JSON, `null` when empty. */
  body: unknown;
}

export interface FakeTeams {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  appId: string;
  appPassword: string;
  /** What to configure as `openid_metadata_url`. */
  openIdMetadataUrl: string;
  /** What to configure as `token_url`. */
  tokenUrl: string;
  /** The `serviceUrl` of the activities the fake sends: its connector. */
  serviceUrl: string;
  /** The bot's account id in activities (`28:<app id>`). */
  botId: string;
  /** Every connector call, in arrival order (also the failed ones). */
  calls: TeamsConnectorCall[];
  /** Token requests that got a token. */
  tokensIssued(): number;
  /** Tokens issued so far stop working (401), as when they are revoked. */
  revokeTokens(): void;
  /** The texts posted into a conversation (successful POSTs), in order; the id without `;messageid=`. */
  deliveredTo(conversationId: string): string[];
  /** The activities posted into a conversation (successful POSTs), texts and images, in order. */
  postedTo(conversationId: string): TeamsPostedActivity[];
  /** The updates that succeeded, in order. */
  edits(): TeamsEdit[];
  /** Calls answered 429 for exceeding `perConversation` (injected failures not included). */
  rateLimitViolations(): number;
  /**
   * The next `count` connector calls fail with `failure`; with `after`, that many calls are
   * answered as usual first (`failNext(1, failure, { after: 1 })` fails the second call from now).
   */
  failNext(count: number, failure: TeamsFailure, options?: { after?: number }): void;
  /** An inline image (or other file) of a message: its attachment, `contentUrl` on the connector. */
  addAttachment(content: Buffer, contentType: string): { contentType: string; contentUrl: string };
  /**
   * A file shared in a personal chat: its `application/vnd.microsoft.teams.file.download.info`
   * attachment, whose `content.downloadUrl` serves the bytes to whoever holds the link.
   */
  addSharedFile(content: Buffer, name: string): Record<string, unknown>;
  /** Every request for a file, in arrival order. */
  fileRequests(): TeamsFileRequest[];
  /** A bearer token as the connector signs it for the bot. */
  signToken(options: { serviceUrl: string; forged?: boolean; audience?: string }): Promise<string>;
  /** Posts `activity` (an object as JSON, a string as is) to `<gatewayUrl><path>`, signed as `options` says. */
  post(
    gatewayUrl: string,
    path: string,
    activity: Record<string, unknown> | string,
    options?: PostOptions,
  ): Promise<PostAnswer>;
  close(): Promise<void>;
}

/** What a `message` activity from a person says; the rest is filled in as Teams does. */
export interface MessageSpec {
  /** `personal` (a 1:1 chat), `groupChat` or `channel`. */
  conversationType: 'personal' | 'groupChat' | 'channel';
  /** The conversation; a channel post's reply chain is `<channel>;messageid=<root id>`. */
  conversationId: string;
  text: string;
  /** Prefixes `<at>Switchboard</at>` and adds the mention entity of the bot. */
  mentionBot?: boolean;
  /** Default: a new one. */
  id?: string;
  /** Default: a person, `29:user`. */
  from?: { id: string; name?: string; role?: string };
  /** Files of the message (`addAttachment`, `addSharedFile`). */
  attachments?: Array<Record<string, unknown>>;
}

let activitySequence = 0;

/** A `message` activity as the Bot Connector posts it to a Teams bot. */
export function messageActivity(fake: Pick<FakeTeams, 'serviceUrl' | 'botId'>, spec: MessageSpec) {
  activitySequence += 1;
  const bot = { id: fake.botId, name: 'Switchboard' };
  const mention = `<at>${bot.name}</at>`;
  return {
    type: 'message',
    id: spec.id ?? `${Date.now()}${String(activitySequence).padStart(4, '0')}`,
    timestamp: new Date().toISOString(),
    serviceUrl: fake.serviceUrl,
    channelId: 'msteams',
    from: spec.from ?? { id: '29:user', name: 'Megan Bowen', aadObjectId: randomUUID() },
    conversation: {
      conversationType: spec.conversationType,
      id: spec.conversationId,
      tenantId: 'tenant-1',
      ...(spec.conversationType === 'personal' ? {} : { isGroup: true }),
    },
    recipient: bot,
    textFormat: 'plain',
    text: spec.mentionBot ? `${mention} ${spec.text}` : spec.text,
    entities: [
      ...(spec.mentionBot ? [{ type: 'mention', mentioned: bot, text: mention }] : []),
      { type: 'clientInfo', locale: 'en-US', country: 'US', platform: 'Web' },
    ],
    channelData: { tenant: { id: 'tenant-1' } },
    ...(spec.attachments === undefined ? {} : { attachments: spec.attachments }),
  };
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
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

/**
 * The most bytes of a request the fake takes: about what the Bot Framework takes of an activity.
 * Past it, 413 `MessageSizeTooBig`, as Teams answers a message too large.
 */
const MAX_ACTIVITY_BYTES = 256 * 1024;

/** The image types a `data:` URI of an attachment may carry. */
const DATA_IMAGE = /^data:image\/(png|jpeg|gif);base64,[A-Za-z0-9+/]+={0,2}$/;

/** What is wrong with an activity's `attachments`, or `null` when nothing is. */
function badAttachments(attachments: unknown): string | null {
  if (attachments === undefined) return null;
  if (!Array.isArray(attachments)) return 'attachments must be an array';
  for (const [index, attachment] of attachments.entries()) {
    const { contentType, contentUrl } = (attachment ?? {}) as Record<string, unknown>;
    if (typeof contentType !== 'string' || contentType === '')
      return `attachments[${index}].contentType is required`;
    if (typeof contentUrl !== 'string') return `attachments[${index}].contentUrl is required`;
    if (!contentUrl.startsWith('https://') && !DATA_IMAGE.test(contentUrl))
      return `attachments[${index}].contentUrl must be an https URL or a base64 data URI of an image`;
  }
  return null;
}

/** Connector routes: `/smba/v3/conversations/<id>/activities[/<activity id>]`. */
const CONNECTOR_ROUTE = /^\/smba\/v3\/conversations\/([^/]+)\/activities(?:\/([^/]+))?$/;

/** Files: `/smba/v3/attachments/<id>/views/<view>` (to the bot's token), `/files/<id>` (pre-authenticated). */
const ATTACHMENT_ROUTE = /^\/smba\/v3\/attachments\/([^/]+)\/views\/[^/]+$/;
const SHARED_FILE_ROUTE = /^\/files\/([^/]+)$/;

/** Starts the fake on 127.0.0.1 and a free port. */
export async function startFakeTeams(options: FakeTeamsOptions = {}): Promise<FakeTeams> {
  const appId = options.appId ?? '00000000-0000-0000-0000-00000000b07';
  const appPassword = options.appPassword ?? 'teams-app-password';
  const tokenLifetimeSec = options.tokenLifetimeSec ?? 3600;
  const kid = 'fake-teams-key';
  const signing = await generateKeyPair('RS256', { extractable: true });
  // Same key id, unpublished key: a token that looks right and does not verify.
  const forging = await generateKeyPair('RS256');
  const publicJwk: JWK = { ...(await exportJWK(signing.publicKey)), kid, use: 'sig', alg: 'RS256' };
  const calls: TeamsConnectorCall[] = [];
  const failures: (TeamsFailure | null)[] = [];
  const hanging = new Set<ServerResponse>();
  const issued = new Map<string, number>();
  const delivered: TeamsPostedActivity[] = [];
  const texts = new Map<string, string>();
  const edits: TeamsEdit[] = [];
  const limiter = createFakeRateLimiter(options.toleranceMs);
  const files = new Map<string, { content: Buffer; contentType: string; tempauth?: string }>();
  const fileRequests: TeamsFileRequest[] = [];
  let baseUrl = '';

  /** A file request answered: the bytes when the bot's token or the link's `tempauth` is right. */
  function serveFile(request: IncomingMessage, response: ServerResponse, url: URL): boolean {
    const attachment = ATTACHMENT_ROUTE.exec(url.pathname);
    const shared = SHARED_FILE_ROUTE.exec(url.pathname);
    const id = attachment?.[1] ?? shared?.[1];
    if (request.method !== 'GET' || id === undefined) return false;
    const file = files.get(`${attachment === null ? 'shared' : 'attachment'}/${id}`);
    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    const expiresAt = token === undefined ? undefined : issued.get(token);
    const allowed =
      attachment !== null
        ? expiresAt !== undefined && expiresAt > Date.now()
        : file !== undefined && url.searchParams.get('tempauth') === file.tempauth;
    const status = !allowed ? 401 : file === undefined ? 404 : 200;
    fileRequests.push({ path: url.pathname, authorization: request.headers.authorization, status });
    if (status !== 200 || file === undefined) {
      sendJson(response, status, { error: { code: status === 401 ? 'Unauthorized' : 'NotFound' } });
      return true;
    }
    response.writeHead(200, {
      'content-type': file.contentType,
      'content-length': String(file.content.length),
    });
    response.end(file.content);
    return true;
  }

  function metadata() {
    return {
      issuer: BOT_FRAMEWORK_ISSUER,
      authorization_endpoint: `${baseUrl}/v1/.well-known/authorize`,
      jwks_uri: `${baseUrl}/v1/.well-known/keys`,
      id_token_signing_alg_values_supported: ['RS256'],
      token_endpoint_auth_methods_supported: ['private_key_jwt'],
    };
  }

  function issueToken(form: URLSearchParams): { status: number; body: unknown } {
    if (form.get('grant_type') !== 'client_credentials') {
      return { status: 400, body: { error: 'unsupported_grant_type' } };
    }
    if (form.get('client_id') !== appId || form.get('client_secret') !== appPassword) {
      return {
        status: 401,
        body: {
          error: 'invalid_client',
          error_description: 'AADSTS7000215: Invalid client secret provided.',
        },
      };
    }
    if (form.get('scope') !== 'https://api.botframework.com/.default') {
      return { status: 400, body: { error: 'invalid_scope' } };
    }
    const token = `fake-teams-access-${randomUUID()}`;
    issued.set(token, Date.now() + tokenLifetimeSec * 1000);
    return {
      status: 200,
      body: {
        token_type: 'Bearer',
        expires_in: tokenLifetimeSec,
        ext_expires_in: tokenLifetimeSec,
        access_token: token,
      },
    };
  }

  function connector(
    call: TeamsConnectorCall,
    arrivedAt: number,
  ): { status: number; body: unknown; headers?: Record<string, string> } {
    const expiresAt = call.token === undefined ? undefined : issued.get(call.token);
    if (expiresAt === undefined || expiresAt <= arrivedAt) {
      return { status: 401, body: { message: 'Authorization has been denied for this request.' } };
    }
    const { text, attachments } = call.body;
    const hasText = typeof text === 'string' && text !== '';
    const hasAttachments = Array.isArray(attachments) && attachments.length > 0;
    if (call.body.type !== 'message' || (!hasText && (call.method === 'PUT' || !hasAttachments))) {
      return { status: 400, body: { error: { code: 'BadArgument', message: 'Missing activity text' } } };
    }
    const bad = badAttachments(attachments);
    if (bad !== null) return { status: 400, body: { error: { code: 'BadArgument', message: bad } } };
    const chat = call.conversationId.split(';messageid=')[0] ?? call.conversationId;
    if (options.perConversation !== undefined) {
      const waitMs = limiter.admit([[`conversation:${chat}`, options.perConversation]], arrivedAt);
      if (waitMs > 0) {
        const retryAfter = String(Math.ceil(waitMs / 1000));
        return {
          status: 429,
          body: { error: { code: 'TooManyRequests' } },
          headers: { 'retry-after': retryAfter },
        };
      }
    }
    if (call.method === 'PUT') {
      const key = `${chat}/${call.activityId}`;
      if (!texts.has(key))
        return { status: 404, body: { error: { code: 'ActivityNotFoundInConversation' } } };
      texts.set(key, text as string);
      edits.push({
        conversationId: chat,
        activityId: call.activityId ?? '',
        text: text as string,
        at: arrivedAt,
      });
      return { status: 200, body: { id: call.activityId } };
    }
    const id = `1:${randomUUID()}`;
    if (hasText) texts.set(`${chat}/${id}`, text as string);
    delivered.push({
      conversationId: chat,
      ...(hasText ? { text: text as string } : {}),
      ...(hasAttachments ? { attachments: attachments as TeamsAttachment[] } : {}),
    });
    return { status: 201, body: { id } };
  }

  const server = createServer(async (request, response) => {
    // Read before the body: limits count a request when it reaches the server.
    const arrivedAt = Date.now();
    const path = request.url?.split('?')[0] ?? '';
    const raw = await readBody(request);
    if (request.method === 'GET' && path === '/v1/.well-known/openidconfiguration') {
      sendJson(response, 200, metadata());
      return;
    }
    if (request.method === 'GET' && path === '/v1/.well-known/keys') {
      sendJson(response, 200, { keys: [{ ...publicJwk, endorsements: ['msteams'] }] });
      return;
    }
    if (request.method === 'POST' && /^\/[^/]+\/oauth2\/v2\.0\/token$/.test(path)) {
      const answer = issueToken(new URLSearchParams(raw));
      sendJson(response, answer.status, answer.body);
      return;
    }
    if (serveFile(request, response, new URL(request.url ?? '/', baseUrl))) return;
    const route = CONNECTOR_ROUTE.exec(path);
    if (route === null || (request.method !== 'POST' && request.method !== 'PUT')) {
      sendJson(response, 404, { error: { code: 'NotFound', message: `no route ${request.method} ${path}` } });
      return;
    }
    const call: TeamsConnectorCall = {
      method: request.method,
      conversationId: decodeURIComponent(route[1] ?? ''),
      activityId: route[2] === undefined ? undefined : decodeURIComponent(route[2]),
      token: /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1],
      body: raw === '' ? {} : (JSON.parse(raw) as Record<string, unknown>),
      at: arrivedAt,
    };
    calls.push(call);
    if (Buffer.byteLength(raw) > MAX_ACTIVITY_BYTES) {
      sendJson(response, 413, { error: { code: 'MessageSizeTooBig', message: 'Message size too big' } });
      return;
    }
    const failure = failures.shift();
    if (failure?.kind === 'hang') {
      hanging.add(response);
      return;
    }
    if (failure?.kind === 'rate_limited') {
      sendJson(
        response,
        429,
        { error: { code: 'TooManyRequests' } },
        { 'retry-after': String(failure.retryAfterSec) },
      );
      return;
    }
    if (failure?.kind === 'http_status') {
      sendJson(response, failure.status, { error: { code: 'FakeFailure', message: 'injected failure' } });
      return;
    }
    const answer = connector(call, arrivedAt);
    sendJson(response, answer.status, answer.body, answer.headers);
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const serviceUrl = `${baseUrl}/smba/`;

  async function signToken(claims: { serviceUrl: string; forged?: boolean; audience?: string }) {
    const key: CryptoKey = claims.forged ? forging.privateKey : signing.privateKey;
    return new SignJWT({ serviceurl: claims.serviceUrl })
      .setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' })
      .setIssuer(BOT_FRAMEWORK_ISSUER)
      .setAudience(claims.audience ?? appId)
      .setIssuedAt()
      .setNotBefore('0s')
      .setExpirationTime('1h')
      .sign(key);
  }

  return {
    url: baseUrl,
    appId,
    appPassword,
    openIdMetadataUrl: `${baseUrl}/v1/.well-known/openidconfiguration`,
    tokenUrl: `${baseUrl}/botframework.com/oauth2/v2.0/token`,
    serviceUrl,
    botId: `28:${appId}`,
    calls,
    tokensIssued: () => issued.size,
    revokeTokens() {
      for (const token of issued.keys()) issued.set(token, 0);
    },
    deliveredTo: (conversationId) =>
      delivered.flatMap((entry) =>
        entry.conversationId === conversationId && entry.text !== undefined ? [entry.text] : [],
      ),
    postedTo: (conversationId) => delivered.filter((entry) => entry.conversationId === conversationId),
    edits: () => [...edits],
    rateLimitViolations: () => limiter.violations(),
    failNext(count, failure, { after = 0 } = {}) {
      failures.push(...Array<null>(after).fill(null), ...Array<TeamsFailure>(count).fill(failure));
    },
    addAttachment(content, contentType) {
      const id = `0-eus-d1-${randomUUID().replaceAll('-', '')}`;
      files.set(`attachment/${id}`, { content, contentType });
      return { contentType, contentUrl: `${serviceUrl}v3/attachments/${id}/views/original` };
    },
    addSharedFile(content, name) {
      const id = randomUUID();
      const tempauth = randomUUID();
      files.set(`shared/${id}`, { content, contentType: 'application/octet-stream', tempauth });
      return {
        contentType: 'application/vnd.microsoft.teams.file.download.info',
        contentUrl: `${baseUrl}/personal/megan/Documents/${encodeURIComponent(name)}`,
        name,
        content: {
          downloadUrl: `${baseUrl}/files/${id}?tempauth=${tempauth}`,
          uniqueId: id,
          fileType: name.split('.').pop(),
        },
      };
    },
    fileRequests: () => [...fileRequests],
    signToken,
    async post(gatewayUrl, path, activity, postOptions = {}) {
      const raw = typeof activity === 'string' ? activity : JSON.stringify(activity);
      const signature = postOptions.signature ?? 'valid';
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (signature !== 'none') {
        const activityUrl = typeof activity === 'string' ? serviceUrl : String(activity.serviceUrl);
        const token = await signToken({
          serviceUrl: postOptions.serviceUrlClaim ?? activityUrl,
          forged: signature === 'forged',
          ...(postOptions.audience === undefined ? {} : { audience: postOptions.audience }),
        });
        headers.authorization = `Bearer ${token}`;
      }
      const response = await fetch(`${gatewayUrl}${path}`, { method: 'POST', headers, body: raw });
      const text = await response.text();
      let body: unknown = text === '' ? null : text;
      try {
        body = text === '' ? null : JSON.parse(text);
      } catch {}
      return { status: response.status, headers: response.headers, body };
    },
    async close() {
      for (const response of hanging) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
