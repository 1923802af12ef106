import { parseJsonObject } from '@switchboard/channel-kit';
import { createJwtVerifier } from '@switchboard/channel-kit/jwt';
import { isSwitchboardError } from '@switchboard/core';

/** The issuer of the tokens the Bot Framework Connector sends with activities. */
export const BOT_FRAMEWORK_ISSUER = 'https://api.botframework.com';

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

/**
 * The check of one inbound call (Bot Framework "Authenticate requests from the Bot Connector
 * service"): `Authorization: Bearer <JWT>` signed by a key of the OpenID metadata's JWKS, issued
 * by `https://api.botframework.com` for the bot's app id, not expired, whose `serviceUrl` claim is
 * the activity's — so a token taken from one activity cannot send replies to another server.
 * Resolves why the call is refused, or `null`; rejects (SB_CHANNEL_UNREACHABLE, a 503) when the
 * keys cannot be fetched. The body is read here only for its `serviceUrl`: a body that is not
 * JSON is left to the parser's 400.
 */
export function createTeamsAuthenticator(options: TeamsAuthOptions) {
  const verifier = createJwtVerifier({
    openIdMetadataUrl: options.openIdMetadataUrl,
    issuer: BOT_FRAMEWORK_ISSUER,
    audience: options.appId,
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  return async (authorization: string | undefined, rawBody: string): Promise<string | null> => {
    let claims: Record<string, unknown>;
    try {
      claims = await verifier.verify(authorization);
    } catch (err) {
      if (isSwitchboardError(err, 'SB_HTTP_UNAUTHORIZED')) return err.message;
      throw err;
    }
    const claimed = claims.serviceUrl;
    if (typeof claimed !== 'string') return 'Authorization: the token has no serviceUrl claim';
    const body = parseJsonObject(rawBody);
    const serviceUrl = body.ok ? body.value.serviceUrl : undefined;
    if (typeof serviceUrl === 'string' && !sameServiceUrl(serviceUrl, claimed)) {
      return "Authorization: the token's serviceUrl claim is not the activity's serviceUrl";
    }
    return null;
  };
}
