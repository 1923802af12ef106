import { SwitchboardError } from '@switchboard/core';
import {
  type JWTPayload,
  type JWTVerifyGetKey,
  createRemoteJWKSet,
  errors as joseErrors,
  jwtVerify,
} from 'jose';

/** Where the signing keys are published: a JWKS directly, or an OpenID metadata document naming it. */
export type KeySource = { jwksUrl: string } | { openIdMetadataUrl: string };

/** Options of `createJwtVerifier`. */
export type JwtVerifierOptions = KeySource & {
  /** The accepted `iss` values (Teams: `https://api.botframework.com`). */
  issuer: string | readonly string[];
  /** The accepted `aud` values: the bot's app id (Teams) or project number (Google Chat). */
  audience: string | readonly string[];
  /** Signature algorithms accepted. Default: `['RS256']`, what Teams and Google Chat sign with. */
  algorithms?: readonly string[];
  /** Clock skew allowed on `exp` and `nbf`. Default: 5 minutes, as the Bot Framework allows. */
  clockToleranceMs?: number;
  /** How long one metadata or JWKS fetch may take. Default: 5 s. */
  fetchTimeoutMs?: number;
  /** After a failed fetch, calls are refused without fetching for this long. Default: 30 s. */
  cooldownMs?: number;
  /** Clock, ms since the epoch. Default: `Date.now`. */
  now?: () => number;
};

/** Checks the `Authorization` header of one call. */
export interface JwtVerifier {
  /**
   * Resolves the token's claims when `authorization` is `Bearer <JWT>` (scheme in any case) signed
   * by a published key, with an accepted issuer and audience and an `exp` not passed. Rejects with
   * SB_HTTP_UNAUTHORIZED naming what was wrong, or SB_CHANNEL_UNREACHABLE (retryable) when the
   * keys could not be fetched, then for `cooldownMs` without fetching again.
   */
  verify(authorization: string | undefined): Promise<JWTPayload>;
}

const DEFAULTS = {
  algorithms: ['RS256'],
  clockToleranceMs: 5 * 60_000,
  fetchTimeoutMs: 5_000,
  cooldownMs: 30_000,
  now: Date.now,
} satisfies Partial<JwtVerifierOptions>;

const BEARER = /^bearer +([^\s]+)$/i;

function unauthorized(message: string, cause?: unknown): SwitchboardError {
  return new SwitchboardError('SB_HTTP_UNAUTHORIZED', { message, cause });
}

/** What was wrong with a token that did not verify, from jose's error. */
function tokenProblem(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return 'the token has expired';
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    return `claim ${err.claim}: ${err.reason === 'check_failed' ? 'not accepted' : err.reason}`;
  }
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'the signature does not verify';
  if (err instanceof joseErrors.JWKSNoMatchingKey) return 'no published key matches the token';
  if (err instanceof joseErrors.JOSEAlgNotAllowed || err instanceof joseErrors.JOSENotSupported) {
    return 'the signature algorithm is not accepted';
  }
  return 'the token is malformed';
}

/** The `jwks_uri` of an OpenID metadata document. */
async function fetchJwksUri(metadataUrl: string, timeoutMs: number): Promise<URL> {
  const response = await fetch(metadataUrl, { signal: AbortSignal.timeout(timeoutMs) });
  if (response.status !== 200) throw new Error(`metadata answered HTTP ${response.status}`);
  const metadata = (await response.json()) as { jwks_uri?: unknown } | null;
  if (typeof metadata?.jwks_uri !== 'string') throw new Error('metadata has no jwks_uri');
  return new URL(metadata.jwks_uri);
}

/**
 * A verifier of JWT bearer tokens signed with keys an identity provider publishes (Microsoft
 * Teams, Google Chat). Keys are fetched on first use and cached by jose (refetched after 10
 * minutes, or for an unknown `kid`); an OpenID metadata document is read once, on first use. A
 * failed fetch starts a cooldown during which calls are refused at once: a dead identity provider
 * is not hammered by every inbound call, and the platform redelivers after the 503.
 */
export function createJwtVerifier(options: JwtVerifierOptions): JwtVerifier {
  const algorithms = [...(options.algorithms ?? DEFAULTS.algorithms)];
  const clockToleranceMs = options.clockToleranceMs ?? DEFAULTS.clockToleranceMs;
  const fetchTimeoutMs = options.fetchTimeoutMs ?? DEFAULTS.fetchTimeoutMs;
  const cooldownMs = options.cooldownMs ?? DEFAULTS.cooldownMs;
  const now = options.now ?? DEFAULTS.now;
  const source = 'jwksUrl' in options ? options.jwksUrl : options.openIdMetadataUrl;
  let keys: Promise<JWTVerifyGetKey> | null = null;
  let coolingUntilMs = 0;

  function unreachable(cause: unknown): SwitchboardError {
    return new SwitchboardError('SB_CHANNEL_UNREACHABLE', {
      message: `signing keys could not be fetched from ${source}`,
      cause,
      retryable: true,
      retryAfterMs: Math.max(1, coolingUntilMs - now()),
    });
  }

  /** jose's cached key set, made once the JWKS URL is known; concurrent first calls share it. */
  function remoteKeys(): Promise<JWTVerifyGetKey> {
    keys ??= (async () => {
      const jwksUrl =
        'jwksUrl' in options
          ? new URL(options.jwksUrl)
          : await fetchJwksUri(options.openIdMetadataUrl, fetchTimeoutMs);
      return createRemoteJWKSet(jwksUrl, { timeoutDuration: fetchTimeoutMs });
    })();
    // A failed metadata fetch is tried again after the cooldown.
    keys.catch(() => {
      keys = null;
    });
    return keys;
  }

  /** jose's key lookup, with fetch failures turned into a cooldown. */
  const getKey: JWTVerifyGetKey = async (header, token) => {
    if (now() < coolingUntilMs) throw unreachable(undefined);
    try {
      return await (await remoteKeys())(header, token);
    } catch (err) {
      // A token naming a key that is not published, or an algorithm no published key can serve
      // (HS256), is the caller's fault, not the provider's: it must not start the cooldown that
      // refuses every good token meanwhile.
      if (
        err instanceof joseErrors.JWKSNoMatchingKey ||
        err instanceof joseErrors.JWKSMultipleMatchingKeys ||
        err instanceof joseErrors.JOSENotSupported
      )
        throw err;
      coolingUntilMs = now() + cooldownMs;
      throw unreachable(err);
    }
  };

  return {
    async verify(authorization) {
      const token = authorization === undefined ? undefined : BEARER.exec(authorization.trim())?.[1];
      if (token === undefined) throw unauthorized('Authorization: expected "Bearer <token>"');
      try {
        const { payload } = await jwtVerify(token, getKey, {
          issuer: typeof options.issuer === 'string' ? options.issuer : [...options.issuer],
          audience: typeof options.audience === 'string' ? options.audience : [...options.audience],
          algorithms,
          requiredClaims: ['exp'],
          clockTolerance: Math.round(clockToleranceMs / 1000),
          currentDate: new Date(now()),
        });
        return payload;
      } catch (err) {
        if (err instanceof SwitchboardError) throw err;
        throw unauthorized(`Authorization: ${tokenProblem(err)}`, err);
      }
    },
  };
}
