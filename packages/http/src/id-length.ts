/** Longest id or name a route accepts (session, user, message, dead letter…). */
export const MAX_ID_CHARS = 256;

/**
 * The server's `maxParamLength`: a path parameter is matched still percent-encoded, and a BMP
 * character takes up to 9 characters that way (`%E2%82%AC`). With fastify's default of 100, an id
 * the body accepts made its event stream answer 414.
 */
export const MAX_PARAM_LENGTH = MAX_ID_CHARS * 9;
