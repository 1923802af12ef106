import { type Authorization, parseJsonObject } from '@switchboard/channel-kit';
import { createJwtVerifier } from '@switchboard/channel-kit/jwt';
import { isSwitchboardError } from '@switchboard/core';

/** The issuer of the tokens the Bot Framework Connector sends with activities. */
export const BOT_FRAMEWORK_ISSUER = 'https://api.botframework.com';

/**
 * The claim naming the connector a token was issued for. Microsoft's prose writes `serviceUrl`,
 * but the tokens carry it in lower case, as the Bot Framework SDKs read it.
 */
const SERVICE_URL_CLAIM = 'serviceurl';

/** Options of `createTeamsAuthenticator`. */
export interface TeamsAuthOptions {
  /** The bot's Microsoft App ID: the tokens' audience. */
  appId: string;
  /** The OpenID metadata document naming the signing keys (JWKS). */
  openIdMetadataUrl: string;
  /** Clock, ms since the epoch. Default: `Date.now`. */
  now?: () => number;
}

/** Service URLs compare without a trailing slash, which the connector sometimes adds. */
function sameServiceUrl(a: string, b: string): boolean {
  return a.replace(/\/+$/, '') === b.replace(/\/+$/, '');
}

/** The checks of one inbound call, split at the body: `authorize` before it is read, `verify` after. */
export interface TeamsAuthenticator {
  /**
   * Checks `Authorization: Bearer <JWT>`: signed by a key of the OpenID metadata's JWKS, issued by
   * `https://api.botframework.com` for the bot's app id, not expired, with a `serviceurl` claim.
   * Resolves the refusal, or the claimed service URL as the grant; rejects (SB_CHANNEL_UNREACHABLE,
   * a 503) when the keys cannot be fetched.
   */
  authorize(authorization: string | undefined): Promise<Authorization<string>>;
  /**
   * Checks that the activity's `serviceUrl` is the one the token was issued for, so that a token
   * taken from one activity cannot send replies to another server. Returns why the call is
   * refused, or `null`. The body is read here only for its `serviceUrl`: a body that is not JSON is
   * left to the parser's 400.
   */
  verify(claimedServiceUrl: string, rawBody: string): string | null;
}

/**
 * The check of inbound calls (Bot Framework "Authenticate requests from the Bot Connector
 * service"). The token is checked before the body is read, so that a caller without one cannot
 * make the gateway read a body up to the limit; only the comparison with the activity waits for
 * the body.
 */
export function createTeamsAuthenticator(options: TeamsAuthOptions): TeamsAuthenticator {
  const verifier = createJwtVerifier({
    openIdMetadataUrl: options.openIdMetadataUrl,
    issuer: BOT_FRAMEWORK_ISSUER,
    audience: options.appId,
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  return {
    async authorize(authorization) {
      let claims: Record<string, unknown>;
      try {
        claims = await verifier.verify(authorization);
      } catch (err) {
        if (isSwitchboardError(err, 'SB_HTTP_UNAUTHORIZED')) return { refused: err.message };
        throw err;
      }
      const claimed = claims[SERVICE_URL_CLAIM];
      if (typeof claimed !== 'string') return { refused: 'Authorization: the token has no serviceUrl claim' };
      return { grant: claimed };
    },

    verify(claimedServiceUrl, rawBody) {
      const body = parseJsonObject(rawBody);
      const serviceUrl = body.ok ? body.value.serviceUrl : undefined;
      if (typeof serviceUrl === 'string' && !sameServiceUrl(serviceUrl, claimedServiceUrl)) {
        return "Authorization: the token's serviceUrl claim is not the activity's serviceUrl";
      }
      return null;
    },
  };
}
