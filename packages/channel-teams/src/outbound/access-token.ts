import { requestPlatform } from '@switchboard/channel-kit';
import { SwitchboardError } from '@switchboard/core';

/** The scope of a token for the Bot Connector service. */
export const BOT_FRAMEWORK_SCOPE = 'https://api.botframework.com/.default';

/** A token is fetched again this long before it expires, so that none expires on its way. */
export const REFRESH_BEFORE_EXPIRY_MS = 5 * 60_000;

/** Options of `createAccessTokens`. */
export interface AccessTokenOptions {
  /** The configured channel id, for errors. */
  channelId: string;
  tokenUrl: string;
  appId: string;
  appPassword: string;
  /** How long the token endpoint has to answer, ms. */
  timeoutMs: number;
  /** Clock, ms since the epoch. */
  now: () => number;
}

/** The bot's bearer tokens for the Bot Connector. */
export interface AccessTokens {
  /**
   * A token valid for a while yet: the cached one, or a new one (concurrent callers share the
   * fetch); rejects with `signal.reason` once it aborts.
   */
  get(signal?: AbortSignal): Promise<string>;
  /** Forgets the cached token (the connector refused it). */
  forget(token: string): void;
  /** The password and the tokens issued so far, to keep them out of errors. */
  secrets(): readonly string[];
}

/** `promise`, or `signal.reason` once it aborts: one caller's deadline does not end a shared fetch. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * The OAuth 2.0 client-credentials flow of the Bot Framework ("Authenticate requests from your
 * bot to the Bot Connector service"): `POST token_url` with the app id and password for the
 * `https://api.botframework.com/.default` scope. The token is kept until `expires_in` less
 * `REFRESH_BEFORE_EXPIRY_MS`. A refused password (401) is SB_CHANNEL_AUTH_FAILED naming
 * `channels[<id>].app_password`; the password and tokens never reach an error.
 */
export function createAccessTokens(options: AccessTokenOptions): AccessTokens {
  const { channelId, now } = options;
  const secrets = [options.appPassword];
  let cached: { token: string; refreshAtMs: number } | null = null;
  let fetching: Promise<string> | null = null;

  async function fetchToken(): Promise<string> {
    const answer = await requestPlatform({
      where: { type: 'teams', channelId, call: `POST ${options.tokenUrl}` },
      url: options.tokenUrl,
      form: {
        grant_type: 'client_credentials',
        client_id: options.appId,
        client_secret: options.appPassword,
        scope: BOT_FRAMEWORK_SCOPE,
      },
      timeoutMs: options.timeoutMs,
      secrets,
      credentialPath: `channels[${channelId}].app_password`,
    });
    const { access_token: token, expires_in: expiresIn } = (answer ?? {}) as Record<string, unknown>;
    if (typeof token !== 'string' || typeof expiresIn !== 'number') {
      throw new SwitchboardError('SB_CHANNEL_SEND_FAILED', {
        message: `teams channel "${channelId}": the token endpoint answered without access_token and expires_in`,
        retryable: true,
      });
    }
    secrets.push(token);
    cached = { token, refreshAtMs: now() + expiresIn * 1000 - REFRESH_BEFORE_EXPIRY_MS };
    return token;
  }

  return {
    get(signal) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      if (cached !== null && now() < cached.refreshAtMs) return Promise.resolve(cached.token);
      fetching ??= fetchToken().finally(() => {
        fetching = null;
      });
      return signal === undefined ? fetching : untilAborted(fetching, signal);
    },
    forget(token) {
      if (cached?.token === token) cached = null;
    },
    secrets: () => secrets,
  };
}
