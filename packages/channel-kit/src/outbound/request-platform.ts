import { SwitchboardError } from '@switchboard/core';
import { type ChannelFailureOptions, type FailedCall, channelFailure } from './channel-failure.js';
import { failureOfHttpStatus } from './http-failure.js';
import { networkReasonOf } from './network-reason.js';

/** Options of `requestPlatform`. */
export interface PlatformRequest extends ChannelFailureOptions {
  /** Which call this is, for errors. */
  where: FailedCall;
  /** Default: `POST`. */
  method?: string;
  url: string;
  /** Sent as they are (`Authorization`…); `content-type: application/json` is added with a body. */
  headers?: Record<string, string>;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as `application/x-www-form-urlencoded` instead of `body` (OAuth token endpoints). */
  form?: Record<string, string>;
  /** Sent as `multipart/form-data` instead of `body` (a file upload). */
  multipart?: FormData;
  /** How long the platform has to answer, in ms. */
  timeoutMs: number;
  /** The send's deadline: once it aborts, the call rejects with its reason. */
  signal?: AbortSignal;
}

/**
 * The most of an answer read, in bytes: platform answers are small JSON documents, and an endless
 * or huge one (a broken proxy at a configured API URL) must not fill the gateway's memory before
 * the timeout ends it.
 */
export const MAX_ANSWER_BYTES = 1024 * 1024;

/** An answer's text, or `undefined` once it passes `MAX_ANSWER_BYTES` (the rest is not read). */
async function boundedText(response: Response): Promise<string | undefined> {
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks).toString('utf8');
    size += value.byteLength;
    if (size > MAX_ANSWER_BYTES) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
}

/** An answer's body: parsed JSON, or undefined when empty or not JSON (an HTML error page). */
function parsedBody(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * One JSON-over-HTTP call to a platform without an SDK client (LINE push, WhatsApp Cloud API),
 * or a form post answered with JSON (an OAuth client-credentials token, a multipart upload):
 * resolves with the parsed body of a 2xx answer. A non-2xx answer rejects with `channelFailure`
 * of its status, `Retry-After` and the platform's message; no answer within `timeoutMs` (its
 * body included), or none at all, with a retryable SB_CHANNEL_SEND_FAILED. An answer is read up
 * to `MAX_ANSWER_BYTES`: a 2xx one past it rejects with a final SB_CHANNEL_SEND_FAILED. Secrets
 * are masked in every error. When `signal` aborts, rejects with `signal.reason`.
 */
export async function requestPlatform(options: PlatformRequest): Promise<unknown> {
  const { where, timeoutMs, signal } = options;
  signal?.throwIfAborted();
  const timeout = AbortSignal.timeout(timeoutMs);
  const payload =
    options.multipart ??
    (options.form === undefined
      ? options.body === undefined
        ? undefined
        : JSON.stringify(options.body)
      : new URLSearchParams(options.form));
  const headers = {
    ...(typeof payload === 'string' ? { 'content-type': 'application/json' } : {}),
    ...options.headers,
  };
  try {
    const response = await fetch(options.url, {
      method: options.method ?? 'POST',
      headers,
      ...(payload === undefined ? {} : { body: payload }),
      signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
    });
    const text = await boundedText(response);
    if (text === undefined && response.ok) {
      // Final: the platform may have done what was asked, so a retry could do it twice.
      const description = `the answer is larger than ${MAX_ANSWER_BYTES} bytes`;
      throw channelFailure(where, { status: response.status, description }, options);
    }
    const body = text === undefined ? undefined : parsedBody(text);
    if (response.ok) return body;
    throw channelFailure(where, failureOfHttpStatus(response.status, response.headers, body), options);
  } catch (error) {
    if (error instanceof SwitchboardError) throw error;
    // The caller's deadline is the real cause of an abort; checked first, as both may have passed.
    if (signal?.aborted) throw signal.reason;
    const network = timeout.aborted ? `no answer within ${timeoutMs} ms` : networkReasonOf(error);
    throw channelFailure(where, { network }, options);
  }
}
