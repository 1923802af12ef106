/**
 * What a webhook's `authorize` concluded from the headers, before the body is read: the call is
 * refused (why, naming the header: a 401), or it goes on with a `grant`, what the headers' check
 * learned that the check of the body needs (a bearer token's claims). The grant belongs to this
 * one call: `mountWebhook` hands it to `verify` of the same request.
 */
export type Authorization<Grant = undefined> = { refused: string } | { grant: Grant };

/** A call let in by a check that has nothing to hand on (a shared secret in a header). */
export const AUTHORIZED: Authorization = Object.freeze({ grant: undefined });
