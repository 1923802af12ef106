import { type AuthHook, bearerAuth } from '@switchboard/http';

/**
 * The admin check (docs/design.md §7): bearer `admin.token`, or loopback clients only when it is unset.
 * Guards the admin API and what `admin.protect` closes (`/metrics`, `/readyz`, `/docs`). Use it
 * as an `onRequest` hook, so a request is refused before its query or body is even parsed: an
 * unauthenticated caller learns nothing about the route from a validation error.
 */
export function adminAuth(token: string | undefined): AuthHook {
  return bearerAuth({
    tokens: token === undefined ? [] : [token],
    realm: 'switchboard-admin',
    setting: 'admin.token',
  });
}
