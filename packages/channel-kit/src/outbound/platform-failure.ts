/**
 * How a platform call failed, as far as the shared mapping (`channelFailure`) needs to know:
 * what each adapter extracts from its library's errors, or `failureOfHttpStatus` from an HTTP
 * answer. Every field is optional; a failure with neither `status`, `network` nor `kind` is a
 * final one.
 */
export interface PlatformFailure {
  /** The HTTP status the platform answered. */
  status?: number;
  /** The platform's own error code (`channel_not_found`, Discord's `50013`…). */
  code?: string | number;
  /** The platform's own words for the failure. */
  description?: string;
  /** The wait the platform asked for before a retry, in ms. */
  retryAfterMs?: number;
  /** Set when no answer came: the system error code (`ECONNREFUSED`) or the error's name. */
  network?: string;
  /**
   * What the failure means, for a platform whose status says otherwise: Slack answers HTTP 200
   * with `invalid_auth`, Telegram 404 for a malformed token and 403 for a user who blocked the
   * bot. Absent: derived from `status` and `network` (`failureKindOf`).
   */
  kind?: FailureKind;
}

/**
 * `rate_limited`: wait and retry; `auth`: the credential is wrong, revoked or lacks access;
 * `transient`: the platform or the network failed, the same call may pass later; `refused`: the
 * platform refused this call, which fails again as it is.
 */
export type FailureKind = 'rate_limited' | 'auth' | 'transient' | 'refused';

/**
 * The kind of `failure`: its own `kind`, else 429 → rate limited, 401 and 403 → auth, no answer,
 * 408 and 5xx → transient, anything else → refused.
 */
export function failureKindOf(failure: PlatformFailure): FailureKind {
  if (failure.kind !== undefined) return failure.kind;
  const { status } = failure;
  if (status === 429) return 'rate_limited';
  if (status === 401 || status === 403) return 'auth';
  if (failure.network !== undefined || status === 408 || (status !== undefined && status >= 500)) {
    return 'transient';
  }
  return 'refused';
}
