/**
 * One error class for the whole gateway. Every failure a caller may act on carries a stable
 * `code` (`SB_<AREA>_<PROBLEM>`, never reused), an optional HTTP status, structured details and
 * the `cause`. `docs/errors.md` lists every code with how to fix it; a test keeps both in step.
 */
export const ERROR_CODES = {
  SB_CONFIG_INVALID: { status: 400, message: 'configuration is invalid' },
  SB_CONFIG_NOT_FOUND: { status: 404, message: 'configuration file not found' },
  SB_CONFIG_VARIABLE_MISSING: { status: 400, message: 'a ${VAR} used in the configuration is not set' },
  SB_CONFIG_SECRET_FILE_UNREADABLE: {
    status: 400,
    message: 'a file the configuration reads a value from cannot be read',
  },
  SB_RELOAD_REFUSED: {
    status: 409,
    message: 'the configuration changes settings that need a restart',
  },
  SB_CLI_USAGE: { status: 400, message: 'command-line arguments are invalid' },
  SB_ROUTING_INVALID: { status: 400, message: 'routing rules are invalid' },
  SB_MESSAGE_INVALID: { status: 400, message: 'message does not match the unified message schema' },
  SB_HTTP_BAD_REQUEST: { status: 400, message: 'request is invalid' },
  SB_HTTP_UNAUTHORIZED: { status: 401, message: 'missing or invalid credentials' },
  SB_HTTP_FORBIDDEN: { status: 403, message: 'not allowed from this address' },
  SB_ADMIN_TENANT_FORBIDDEN: {
    status: 403,
    message: "a tenant's admin token may not act on the whole gateway or another tenant",
  },
  SB_HTTP_HOST_NOT_LOOPBACK: { status: 403, message: 'the Host header names no loopback address' },
  SB_HTTP_CROSS_SITE: { status: 403, message: 'a cross-site request may not change state' },
  SB_HTTP_NOT_FOUND: { status: 404, message: 'not found' },
  SB_HTTP_CONFLICT: { status: 409, message: 'request conflicts with an earlier one' },
  SB_HTTP_UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'the request body must be application/json' },
  SB_IDEMPOTENCY_KEY_REUSED: {
    status: 422,
    message: 'the Idempotency-Key was sent before with another request',
  },
  SB_HTTP_INTERNAL: { status: 500, message: 'internal error' },
  SB_HTTP_PAYLOAD_TOO_LARGE: { status: 413, message: 'request body is too large' },
  SB_HTTP_TOO_MANY_REQUESTS: { status: 429, message: 'too many concurrent requests' },
  SB_HTTP_REQUEST_TIMEOUT: { status: 408, message: 'the request was not received in time' },
  SB_QUEUE_FULL: { status: 429, message: 'the queue is full' },
  SB_QUOTA_EXCEEDED: { status: 429, message: 'a quota of the tenant is used up' },
  SB_DRAINING: { status: 503, message: 'the gateway is shutting down' },
  SB_PIPELINE_FAILED: { status: 502, message: 'the pipeline failed' },
  SB_PIPELINE_TIMEOUT: { status: 504, message: 'the pipeline did not answer in time' },
  SB_PIPELINE_MISSING: { status: 500, message: 'the pipeline is not configured' },
  SB_PIPELINE_WORKER_UNAVAILABLE: {
    status: 503,
    message: 'no worker process of the pipeline could be started',
  },
  SB_PIPELINE_WORKER_EXITED: { status: 502, message: 'the worker process exited before answering' },
  SB_PIPELINE_ANSWER_TOO_LARGE: { status: 502, message: 'the pipeline answered more than is kept' },
  SB_PIPELINE_RUN_AS_INVALID: {
    status: 500,
    message: 'the workers of a process pipeline cannot be isolated from the gateway',
  },
  SB_CHANNEL_RATE_LIMITED: { status: 429, message: 'the platform rate-limited the request' },
  SB_CHANNEL_AUTH_FAILED: { status: 502, message: 'the platform refused the credentials' },
  SB_CHANNEL_UNREACHABLE: { status: 503, message: 'the platform could not be reached' },
  SB_CHANNEL_SEND_FAILED: { status: 502, message: 'sending to the platform failed' },
  SB_CHANNEL_SEND_TIMEOUT: { status: 504, message: 'sending to the platform did not finish in time' },
  SB_MEDIA_TOKEN_INVALID: { status: 403, message: 'the media link is not valid' },
  SB_MEDIA_TOKEN_EXPIRED: { status: 410, message: 'the media link has expired' },
  SB_MEDIA_NOT_FOUND: { status: 404, message: 'the media link names no channel that serves media' },
  SB_MEDIA_TOO_LARGE: { status: 413, message: 'the file is larger than the channel serves' },
  SB_MEDIA_UNAVAILABLE: { status: 502, message: 'the platform did not hand over the file' },
  SB_MEDIA_TIMEOUT: { status: 504, message: 'the platform did not start the file in time' },
  SB_MEDIA_BUSY: { status: 503, message: 'the gateway streams as many files as it may' },
  SB_CHANNEL_ATTACHMENTS_UNSUPPORTED: {
    status: 502,
    message: 'the channel cannot send an attachment of the reply',
  },
  SB_CHANNEL_ATTACHMENT_FETCH_FAILED: {
    status: 502,
    message: "an attachment's url could not be fetched",
  },
  SB_STORE_UNAVAILABLE: { status: 503, message: 'the store is unreachable' },
  SB_STORE_FORMAT_UNSUPPORTED: {
    status: 503,
    message: 'the store holds data in a format this build does not read',
  },
  SB_STORE_CONFIG_MISMATCH: {
    status: 503,
    message: 'the limits or pipeline policies of this replica differ from those of the shared store',
  },
  SB_LEASE_LOST: { status: 503, message: 'the turn was taken over by another replica' },
  SB_SHUTDOWN: { status: 503, message: 'aborted by shutdown' },
  SB_DEAD_LETTER_NOT_FOUND: { status: 404, message: 'no dead letter with this id' },
  SB_HANDOFF_NOT_FOUND: { status: 404, message: 'the session is not in handoff' },
  SB_HANDOFF_FULL: { status: 409, message: 'the handoff holds as many entries as it may' },
  SB_HANDOFF_NO_PIPELINE: { status: 409, message: 'no pipeline would answer the held messages' },
  SB_SESSION_KEY_INVALID: { status: 400, message: 'not a session key' },
  SB_DEAD_LETTER_NOT_REPLAYABLE: {
    status: 422,
    message: 'the dead letter was not stored whole and cannot be replayed',
  },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface SwitchboardErrorOptions {
  /** Overrides the code's default message. */
  message?: string;
  details?: Record<string, unknown>;
  cause?: unknown;
  /** For pipeline and channel failures: may the same work succeed if tried again later. */
  retryable?: boolean;
  /** A wait the remote side asked for (HTTP Retry-After, Telegram retry_after), in ms. */
  retryAfterMs?: number;
}

export class SwitchboardError extends Error {
  override readonly name = 'SwitchboardError';
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: Record<string, unknown> | undefined;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;

  constructor(code: ErrorCode, options: SwitchboardErrorOptions = {}) {
    super(options.message ?? ERROR_CODES[code].message, { cause: options.cause });
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.details = options.details;
    this.retryable = options.retryable ?? false;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** True when `error` is a SwitchboardError, optionally with the given code. */
export function isSwitchboardError(error: unknown, code?: ErrorCode): error is SwitchboardError {
  return error instanceof SwitchboardError && (code === undefined || error.code === code);
}
