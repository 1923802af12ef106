import * as lark from '@larksuiteoapi/node-sdk';
import {
  type FailureKind,
  type PlatformFailure,
  abortableCall,
  channelFailure,
  networkReasonOf,
  retryAfterMs,
} from '@switchboard/channel-kit';
import axios, { type AxiosRequestConfig } from 'axios';
import type { FeishuChannelConfig } from '../options.js';

/** Open platform codes that say more than their HTTP status: frequency limits, refused tokens. */
const CODE_KINDS = new Map<number, FailureKind>([
  [99991400, 'rate_limited'], // the app's frequency limit
  [230020, 'rate_limited'], // a chat's message limit
  ...[99991661, 99991663, 99991668, 99991672, 10003, 10014].map((code) => [code, 'auth'] as const),
]);

/** An open platform answer: `code` 0 is success, even on HTTP 200. */
export interface OpenApiAnswer {
  code?: number;
  msg?: string;
}

/** An answer with a non-zero `code` as a failure: the credential codes are auth, the limits rate limits. */
export function answerFailure({ code, msg }: OpenApiAnswer): PlatformFailure {
  const kind = code === undefined ? undefined : CODE_KINDS.get(code);
  return { code, description: msg, ...(kind === undefined ? {} : { kind }) };
}

/** How a call failed: an HTTP error with the platform's answer, no answer, or the SDK's token fetch. */
function failureOf(error: unknown): PlatformFailure {
  if (!axios.isAxiosError(error)) {
    const said = error instanceof Error ? error.message : String(error);
    // The SDK's own words when the token endpoint answered without a token: `failed to get
    // tenant_access_token, code: <code>, msg: <msg>`. Its code says whether the credentials were
    // refused; any other refusal (a frequency limit, an outage) may pass later.
    if (!said.startsWith('failed to get tenant_access_token')) return { description: said };
    const code = /code: (\d+)/.exec(said)?.[1];
    if (code === undefined) return { description: said, kind: 'transient' };
    return { code: Number(code), description: said, kind: CODE_KINDS.get(Number(code)) ?? 'transient' };
  }
  if (error.response === undefined) return { network: networkReasonOf(error) };
  const { status, headers, data } = error.response;
  return {
    status,
    ...answerFailure(data ?? {}),
    retryAfterMs: retryAfterMs(headers['x-ogw-ratelimit-reset']),
  };
}

/**
 * The SDK's logger: its lines carry request objects (the token in their headers), and its level
 * cannot be set below `error`; every failure reaches the gateway's log as the channel's error.
 */
const SDK_SILENT = { error() {}, warn() {}, info() {}, debug() {}, trace() {} };

/** The open platform as one channel calls it. */
export interface FeishuApi {
  /**
   * Calls `request.url` (under the configured domain) with the tenant access token, which the
   * SDK fetches and renews; resolves with the answer when its `code` is 0, else rejects with an
   * SB_CHANNEL_* error. A refused token is dropped and the call made once more with a new one.
   */
  call<T>(name: string, request: AxiosRequestConfig, signal: AbortSignal): Promise<T>;
  /**
   * The tenant access token calls carry, for a request made outside the SDK (a streamed file
   * download): the SDK's cached one, or a new one. Rejects with an SB_CHANNEL_* error.
   */
  tenantToken(signal: AbortSignal): Promise<string>;
  /** Drops the cached tenant token, which a request made outside the SDK saw refused. */
  forgetTenantToken(): void;
}

/**
 * The API of a channel through the SDK: its own token cache (the SDK's default is shared by every
 * client of the process), requests that end at the send's deadline (`signal`) or after
 * `sendTimeoutMs` (the token fetch, which takes no signal), and no SDK log lines.
 */
export function createFeishuApi(
  config: FeishuChannelConfig,
  onRateLimited: (retryAfterMs: number | undefined) => void,
): FeishuApi {
  const cache = new lark.DefaultCache();
  const http = axios.create({ timeout: config.outbound.sendTimeoutMs });
  http.interceptors.response.use((response) => response.data);
  const client = new lark.Client({
    appId: config.appId,
    appSecret: config.appSecret,
    domain: config.apiUrl,
    cache,
    httpInstance: http as unknown as lark.HttpInstance,
    logger: SDK_SILENT,
  });

  function fail(name: string, failure: PlatformFailure) {
    const failed = channelFailure({ type: 'feishu', channelId: config.id, call: name }, failure, {
      secrets: [config.appSecret],
      credentialPath: `channels[${config.id}].app_secret`,
    });
    if (failed.code === 'SB_CHANNEL_RATE_LIMITED') onRateLimited(failed.retryAfterMs);
    return failed;
  }

  async function once<T>(name: string, request: AxiosRequestConfig, signal: AbortSignal): Promise<T> {
    const answer = await abortableCall(
      signal,
      () => client.request<OpenApiAnswer & T>({ ...request, signal }),
      (error) => fail(name, failureOf(error)),
    );
    if (answer.code !== undefined && answer.code !== 0) throw fail(name, answerFailure(answer));
    return answer;
  }

  return {
    async call<T>(name: string, request: AxiosRequestConfig, signal: AbortSignal) {
      const cached = cache.values.size > 0;
      try {
        return await once<T>(name, request, signal);
      } catch (error) {
        // A cached token refused (revoked, expired early) is not the credentials' fault: the
        // SDK would keep it until its expiry, so it is dropped and a new one fetched.
        if (!cached || (error as { code?: string }).code !== 'SB_CHANNEL_AUTH_FAILED') throw error;
        cache.values.clear();
        return once<T>(name, request, signal);
      }
    },

    tenantToken(signal) {
      return abortableCall(
        signal,
        // The SDK types its token manager as `any`.
        () => client.tokenManager.getTenantAccessToken() as Promise<string>,
        (error) => fail('tenant_access_token', failureOf(error)),
      );
    },

    forgetTenantToken() {
      cache.values.clear();
    },
  };
}
