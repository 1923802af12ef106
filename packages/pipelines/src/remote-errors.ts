import { isSwitchboardError, type SecretMasker, SwitchboardError } from '@switchboard/core';
import { type RemoteAnswer, headerOf } from './post-json.js';

/** Longest response excerpt kept in error details: enough to diagnose, never a whole page. */
const EXCERPT_CHARS = 200;

/**
 * Whether a remote answer with this status may succeed later (docs/design.md §4): 408 request timeout,
 * 429 rate limited and every 5xx. Other statuses mean the request itself is wrong.
 */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * The wait a remote side asked for, in ms: OpenAI's `retry-after-ms`, else `Retry-After` as
 * seconds or an HTTP date (RFC 9110 §10.2.3). Undefined when absent or unreadable.
 */
export function retryAfterMsOf(headers: RemoteAnswer['headers'], nowMs: number): number | undefined {
  const ms = Number(headerOf(headers, 'retry-after-ms') ?? Number.NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headerOf(headers, 'retry-after')?.trim();
  if (value === undefined || value === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const dateMs = Date.parse(value);
  return Number.isNaN(dateMs) ? undefined : Math.max(0, dateMs - nowMs);
}

/**
 * The start of a remote body for error details, with every secret masked: a debugging endpoint
 * that echoes its request headers must not leak a token into logs or the audit trail. Masked
 * before the cut, so that a secret straddling the cut cannot leave its first part behind.
 */
export function excerptOf(text: string, mask: SecretMasker): string {
  const masked = mask(text);
  return masked.length > EXCERPT_CHARS ? `${masked.slice(0, EXCERPT_CHARS)}…` : masked;
}

/** SB_PIPELINE_FAILED for a non-2xx answer, retryable and delayed as the status says. */
export function statusError(
  pipeline: string,
  status: number,
  headers: RemoteAnswer['headers'],
  excerpt: string,
  retryable = isRetryableStatus(status),
): SwitchboardError {
  return new SwitchboardError('SB_PIPELINE_FAILED', {
    message: `pipeline ${pipeline}: endpoint answered ${status}`,
    details: { pipeline, status, body: excerpt },
    retryable,
    retryAfterMs: retryable ? retryAfterMsOf(headers, Date.now()) : undefined,
  });
}

/** SB_PIPELINE_FAILED, retryable, for a request that never got an answer (refused, reset, DNS). */
export function networkError(pipeline: string, cause: unknown): SwitchboardError {
  // Node's own messages name the code ("connect ECONNREFUSED …"), undici's say what happened.
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new SwitchboardError('SB_PIPELINE_FAILED', {
    message: `pipeline ${pipeline}: endpoint unreachable (${reason})`,
    details: { pipeline, reason },
    cause,
    retryable: true,
  });
}

/** SB_PIPELINE_FAILED, retryable, for a streamed answer that did not arrive whole. */
export function brokenStream(pipeline: string, reason: string, cause?: unknown): SwitchboardError {
  return new SwitchboardError('SB_PIPELINE_FAILED', {
    message: `pipeline ${pipeline}: broken stream: ${reason}`,
    details: { pipeline, reason },
    cause,
    retryable: true,
  });
}

/**
 * What to throw once the run's signal has fired: the controller's own reason when it is already
 * a SwitchboardError (timeout, shutdown), else SB_PIPELINE_TIMEOUT, retryable.
 */
export function abortError(pipeline: string, signal: AbortSignal, cause: unknown): SwitchboardError {
  if (isSwitchboardError(signal.reason)) return signal.reason;
  return new SwitchboardError('SB_PIPELINE_TIMEOUT', {
    message: `pipeline ${pipeline}: aborted before the endpoint answered`,
    details: { pipeline },
    cause,
    retryable: true,
  });
}

/**
 * What `call` resolves; a failure mapped as a call to a remote endpoint fails: the run's reason
 * once its signal fired, a SwitchboardError as it is, anything else a network error (no answer,
 * or an answer cut while it was read).
 */
export async function remoteCall<T>(
  pipeline: string,
  signal: AbortSignal,
  call: () => Promise<T>,
): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (signal.aborted) throw abortError(pipeline, signal, error);
    if (isSwitchboardError(error)) throw error;
    throw networkError(pipeline, error);
  }
}
