import { SwitchboardError } from '@switchboard/core';
import { GrammyError, HttpError } from 'grammy';

/** What a failed Bot API call was, for the error message; never the token. */
export interface FailedCall {
  /** The configured channel id. */
  channelId: string;
  /** The Bot API method, e.g. `sendMessage`. */
  method: string;
}

/** The network error's own code (`ECONNREFUSED`…); its message may hold the URL, and so the token. */
function networkReason(error: HttpError): string | undefined {
  const inner = error.error as { code?: unknown; type?: unknown } | undefined;
  if (typeof inner?.code === 'string') return inner.code;
  return typeof inner?.type === 'string' ? inner.type : undefined;
}

/**
 * Maps a failed Bot API call to an SB_CHANNEL_* error (STYLE "Errors"): 429 → rate limited with
 * `retryAfterMs` (a wait longer than the channel is willing to honour), 401/404 → the token is
 * wrong (Telegram answers 404 for a malformed one), 5xx and network failures → retryable send
 * failures, other 4xx (chat not found, bot blocked…) → final send failures. Messages carry
 * Telegram's description but never the token; `cause` is left out because grammY's network
 * errors keep the request URL, which contains it.
 */
export function toChannelError(error: unknown, call: FailedCall): SwitchboardError {
  const where = `telegram channel "${call.channelId}": ${call.method}`;
  if (error instanceof GrammyError) {
    const details = { method: call.method, error_code: error.error_code, description: error.description };
    if (error.error_code === 429) {
      const retryAfterMs = (error.parameters.retry_after ?? 1) * 1000;
      return new SwitchboardError('SB_CHANNEL_RATE_LIMITED', {
        message: `${where} was rate-limited; Telegram asks to wait ${retryAfterMs} ms`,
        details,
        retryable: true,
        retryAfterMs,
      });
    }
    if (error.error_code === 401 || error.error_code === 404) {
      return new SwitchboardError('SB_CHANNEL_AUTH_FAILED', {
        message: `${where} failed: the Bot API refused the token (${error.error_code}: ${error.description}); check channels[${call.channelId}].token`,
        details,
      });
    }
    return new SwitchboardError('SB_CHANNEL_SEND_FAILED', {
      message: `${where} failed (${error.error_code}: ${error.description})`,
      details,
      retryable: error.error_code >= 500,
    });
  }
  if (error instanceof HttpError) {
    const reason = networkReason(error);
    return new SwitchboardError('SB_CHANNEL_SEND_FAILED', {
      message: `${where} failed: network error${reason === undefined ? '' : ` (${reason})`}`,
      details: { method: call.method, ...(reason === undefined ? {} : { reason }) },
      retryable: true,
    });
  }
  return new SwitchboardError('SB_CHANNEL_SEND_FAILED', {
    message: `${where} failed: ${error instanceof Error ? error.name : 'unknown error'}`,
    details: { method: call.method },
  });
}
