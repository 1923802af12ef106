import { type AuthHook, bearerAuth, jsonBodyParser, requestForgeryRefusal } from '@switchboard/http';
import type { FastifyInstance } from 'fastify';

/**
 * The admin check (docs/design.md §7): bearer `admin.token` or one of `admin.tokens`, or loopback clients only when it is
 * unset — and then only requests a browser was not driven to send (`requestForgeryRefusal`: a
 * `Host` that is no loopback name, a state-changing request from another origin), since every
 * process on the machine passes as loopback, a browser showing a hostile page included.
 * Guards the admin API, the console and what `admin.protect` closes (`/metrics`, `/readyz`,
 * `/docs`). Use it as an `onRequest` hook, so a request is refused before its query or body is
 * even parsed: an unauthenticated caller learns nothing about the route from a validation error.
 */
export function adminAuth(tokens: readonly { token: string }[]): AuthHook {
  const bearer = bearerAuth({
    tokens: tokens.map((entry) => entry.token),
    realm: 'switchboard-admin',
    setting: 'admin.token',
  });
  // A bearer token is something a page cannot make the browser send (config turns "" into none).
  if (tokens.length > 0) return bearer;
  return (request, reply, done) =>
    bearer(request, reply, (err?: Error) => done(err ?? requestForgeryRefusal(request)));
}

/**
 * Puts a plugin of admin routes behind `auth` and the shared JSON parser. `onRequest`, not
 * `preHandler`: a stranger's bad query gets 401, not a 400 describing the route. The shared
 * parser refuses a `__proto__` key with 400 naming where it is.
 */
export function guardAdminScope(scope: FastifyInstance, auth: AuthHook): void {
  scope.addHook('onRequest', auth);
  scope.removeContentTypeParser('application/json');
  scope.addContentTypeParser('application/json', { parseAs: 'string' }, jsonBodyParser);
}
