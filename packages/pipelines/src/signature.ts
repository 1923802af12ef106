import { createHmac, timingSafeEqual } from 'node:crypto';

/** The request header that carries the signature of an `http` pipeline's body. */
export const SIGNATURE_HEADER = 'X-Switchboard-Signature';

/** Verification defaults: five minutes of clock skew and transit, as Stripe and Slack allow. */
const DEFAULTS = { toleranceMs: 5 * 60_000 } satisfies Partial<VerifySignatureOptions>;

export interface VerifySignatureOptions {
  /** The receiver's clock, ms since the epoch; `Date.now()` by default. */
  nowMs?: number;
  /** How far the signed time may be from `nowMs` before the request counts as a replay; 5 min by default. */
  toleranceMs?: number;
}

/**
 * The `X-Switchboard-Signature` value for `body` sent at `nowMs`:
 * `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`. Signing the time with the body
 * lets the receiver refuse replays of an old request.
 */
export function signBody(secret: string, body: string, nowMs: number = Date.now()): string {
  const t = Math.floor(nowMs / 1000);
  return `t=${t},v1=${hmacHex(secret, t, body)}`;
}

/**
 * True when `header` is a signature of `body` with `secret` made within `toleranceMs` of `nowMs`.
 * Compares in constant time; several `v1=` entries are accepted so that a secret can be rotated.
 */
export function verifySignature(
  secret: string,
  header: string | null | undefined,
  body: string,
  options: VerifySignatureOptions = {},
): boolean {
  if (!header) return false;
  const nowMs = options.nowMs ?? Date.now();
  const toleranceMs = options.toleranceMs ?? DEFAULTS.toleranceMs;
  let t: number | undefined;
  const candidates: string[] = [];
  for (const part of header.split(',')) {
    const [key, value] = part.trim().split('=', 2);
    if (key === 't' && value !== undefined && /^\d+$/.test(value)) t = Number(value);
    else if (key === 'v1' && value !== undefined) candidates.push(value);
  }
  if (t === undefined || Math.abs(nowMs - t * 1000) > toleranceMs) return false;
  const expected = Buffer.from(hmacHex(secret, t, body), 'hex');
  return candidates.some((candidate) => {
    const given = Buffer.from(candidate, 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

function hmacHex(secret: string, t: number, body: string): string {
  return createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
}
