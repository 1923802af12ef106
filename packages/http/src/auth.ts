import { createHash, timingSafeEqual } from 'node:crypto';
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { SwitchboardError } from '@switchboard/core';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';

/** Options of `bearerAuth`. */
export interface BearerAuthOptions {
  /** Accepted bearer tokens; empty strings are ignored. None: loopback clients only. */
  tokens: readonly string[];
  /** Named in the `WWW-Authenticate` challenge. */
  realm: string;
  /** The config key that sets `tokens`, named in the 403 of a non-loopback client. */
  setting: string;
}

/**
 * A fastify `onRequest` (or `preHandler`) hook that hands SwitchboardErrors to the error handler.
 * Callback style rather than async: it runs on every request, and a promise per request shows.
 */
export type AuthHook = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void;

const loopbackV6 = new BlockList();
loopbackV6.addAddress('::1', 'ipv6');

const IPV4_MAPPED_PREFIX = '::ffff:';

// The last address judged and its answer: a client's requests come from one address, and
// judging it again lower-cased a copy of it on every request.
let lastAddress: string | undefined;
let lastIsLoopback = false;

/** True for 127.0.0.0/8, ::1 and IPv4-mapped loopback (`::ffff:127.0.0.1`). */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  if (address !== lastAddress) {
    lastIsLoopback = judgeLoopback(address);
    lastAddress = address;
  }
  return lastIsLoopback;
}

function judgeLoopback(address: string): boolean {
  const mapped = address.toLowerCase().startsWith(IPV4_MAPPED_PREFIX)
    ? address.slice(IPV4_MAPPED_PREFIX.length)
    : address;
  // A valid dotted quad starting `127.` is in 127.0.0.0/8; this runs per request, a BlockList is slower.
  if (isIPv4(mapped)) return mapped.startsWith('127.');
  return isIPv6(address) && loopbackV6.check(address, 'ipv6');
}

// Headers that name the client (or the original host, scheme or path): only a proxy sends them.
const FORWARDING_HEADERS = new Set([
  'forwarded',
  'forwarded-for',
  'x-forwarded',
  'x-real-ip',
  'x-client-ip',
  'true-client-ip',
  'cf-connecting-ip',
  'fastly-client-ip',
  'x-cluster-client-ip',
  'x-original-forwarded-for',
  'via',
]);

function isForwardingHeader(name: string): boolean {
  return FORWARDING_HEADERS.has(name) || name.startsWith('x-forwarded-');
}

/**
 * Whether the client itself is on loopback, not merely a proxy that forwarded its request
 * (docs/design.md §7 "Who is trusted"): the peer of the socket is on loopback and the request carries no
 * forwarding header. A reverse proxy on the same host connects from loopback, so without the
 * header check every client behind it would pass. The address a forwarding header names is never
 * believed here, whatever `server.trust_proxy` says: any client can send `X-Forwarded-For:
 * 127.0.0.1`, and a trusted proxy passes it on (fastify takes the leftmost address), as does
 * anything else on a trusted network that connects directly. `trustProxy` only decides which
 * address `request.ip` reports in logs.
 */
export function isLoopbackClient(request: FastifyRequest): boolean {
  if (!isLoopbackAddress(request.socket.remoteAddress)) return false;
  for (const name in request.headers) {
    if (isForwardingHeader(name)) return false;
  }
  return true;
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

const BEARER = /^Bearer[ ]+(\S+)[ ]*$/i;

/** The token of the request's `Authorization: Bearer <token>`, if it has one. */
function bearerTokenOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  return header === undefined ? undefined : BEARER.exec(header)?.[1];
}

/**
 * Compares bearer tokens with configured ones in constant time: made once per set of tokens
 * (hashed then), it answers the index of the token a request's `Authorization: Bearer` equals —
 * compared with every one, so the time taken tells neither which matched nor its length — -1
 * when it carries one that matches none, undefined when it carries none. Empty tokens never match.
 */
export function bearerTokenMatcher(
  tokens: readonly string[],
): (request: FastifyRequest) => number | undefined {
  // Hashing first gives equal-length buffers, so timingSafeEqual leaks neither the token nor its length.
  const digests = tokens.map((token) => (token === '' ? null : digest(token)));
  return (request) => {
    const token = bearerTokenOf(request);
    if (token === undefined) return undefined;
    const presented = digest(token);
    let matched = -1;
    digests.forEach((expected, index) => {
      if (expected !== null && timingSafeEqual(expected, presented) && matched === -1) matched = index;
    });
    return matched;
  };
}

/** Hex digits of a key's SHA-256 that name it (64 bits: no two configured keys share them). */
const CREDENTIAL_ID_HEX = 16;

/**
 * A stable id of the credential a request that `bearerAuth({ tokens })` let pass came with, for
 * what is the caller's own (its `Idempotency-Key`s): `key:` and the first 16 hex digits of the
 * API key's SHA-256 — never the key itself, the same on every replica and restart — or
 * `loopback` when no tokens are configured (only loopback clients pass then).
 */
export function credentialIdOf(request: FastifyRequest, tokens: readonly string[]): string {
  if (tokens.every((token) => token === '')) return 'loopback';
  const token = bearerTokenOf(request);
  // bearerAuth refused such a request before any handler ran.
  if (token === undefined) throw new SwitchboardError('SB_HTTP_UNAUTHORIZED');
  return `key:${digest(token).toString('hex').slice(0, CREDENTIAL_ID_HEX)}`;
}

/**
 * Bearer-token authentication for the channel and the admin API (docs/design.md §3, §7). With tokens
 * configured every request needs `Authorization: Bearer <token>` (401 otherwise). With none,
 * only loopback clients pass (403 otherwise), so a quick start needs no key and is still closed
 * to the network. "Loopback" is judged by `isLoopbackClient`: a request carrying forwarding
 * headers never passes.
 */
export function bearerAuth(options: BearerAuthOptions): AuthHook {
  const configured = options.tokens.some((token) => token !== '');
  const match = bearerTokenMatcher(options.tokens);
  const challenge = `Bearer realm="${options.realm.replaceAll('"', '')}"`;

  /** The error to answer with, or undefined when the request may pass. */
  function refusal(request: FastifyRequest, reply: FastifyReply): SwitchboardError | undefined {
    if (!configured) {
      if (isLoopbackClient(request)) return undefined;
      return new SwitchboardError('SB_HTTP_FORBIDDEN', {
        message: `${options.setting} is not set, so only loopback clients not forwarded by a proxy are allowed; set ${options.setting}`,
      });
    }
    if ((match(request) ?? -1) >= 0) return undefined;
    const header = request.headers.authorization;
    reply.header(
      'www-authenticate',
      header === undefined ? challenge : `${challenge}, error="invalid_token"`,
    );
    return new SwitchboardError('SB_HTTP_UNAUTHORIZED', {
      message:
        header === undefined
          ? 'missing credentials: send Authorization: Bearer <api key>'
          : 'invalid credentials: the bearer token is not a configured API key',
    });
  }

  return (request, reply, done) => done(refusal(request, reply));
}
