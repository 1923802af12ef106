import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { MEDIA_TYPES } from '../model/message.js';
import { SwitchboardError } from '../model/errors.js';
import type { MediaRef } from '../ports/media.js';

/**
 * The token of a `GET /v1/media/{token}` URL (docs/design.md §2 "Media"): what file, of which
 * channel, until when, signed with the channel's media key so that the gateway needs no store to
 * serve it: `<base64url(JSON claims)>.<base64url(HMAC-SHA256(key, first part))>`. The claims are
 * signed, not encrypted: they hold the platform's file reference, never a credential.
 */

/** What a media token says. */
export interface MediaClaims {
  /** The channel id (`channels[].id`) whose adapter opens the file. */
  channel: string;
  media: MediaRef;
  /** Milliseconds since the epoch after which the token is refused. */
  expiresAtMs: number;
}

const ClaimsSchema = z.strictObject({
  c: z.string().min(1),
  t: z.enum(MEDIA_TYPES),
  f: z.string().optional(),
  u: z.string().optional(),
  n: z.string().optional(),
  m: z.string().optional(),
  s: z.number().int().nonnegative().optional(),
  /** The platform id of the message the file came in. */
  i: z.string().optional(),
  /** Seconds since the epoch: shorter than milliseconds, and precise enough for an expiry. */
  e: z.number().int().nonnegative(),
});

/**
 * A channel's media key: HMAC-SHA256 of the channel id under `secret`, so that each channel's
 * tokens verify only as that channel's, and every replica given the same secret derives the
 * same key without storing one.
 */
export function mediaKeyOf(secret: string, channelId: string): Buffer {
  return createHmac('sha256', secret).update(`switchboard media key\0${channelId}`).digest();
}

function signatureOf(key: Buffer, payload: string): Buffer {
  return createHmac('sha256', key).update(payload).digest();
}

/** A token for `claims`, signed with the channel's media key (`mediaKeyOf`). */
export function signMediaToken(key: Buffer, claims: MediaClaims): string {
  const { media } = claims;
  const body: z.input<typeof ClaimsSchema> = {
    c: claims.channel,
    t: media.type,
    ...(media.file_id === undefined ? {} : { f: media.file_id }),
    ...(media.url === undefined ? {} : { u: media.url }),
    ...(media.name === undefined ? {} : { n: media.name }),
    ...(media.mime_type === undefined ? {} : { m: media.mime_type }),
    ...(media.size === undefined ? {} : { s: media.size }),
    ...(media.message_id === undefined ? {} : { i: media.message_id }),
    e: Math.ceil(claims.expiresAtMs / 1000),
  };
  const payload = Buffer.from(JSON.stringify(body)).toString('base64url');
  return `${payload}.${signatureOf(key, payload).toString('base64url')}`;
}

function invalid(reason: string): SwitchboardError {
  return new SwitchboardError('SB_MEDIA_TOKEN_INVALID', {
    message: `the media link is not valid: ${reason}`,
  });
}

/**
 * The channel a token names, read before its signature is checked (the key depends on it).
 * Throws SB_MEDIA_TOKEN_INVALID when the token cannot be read.
 */
export function mediaTokenChannel(token: string): string {
  return readClaims(token).claims.c;
}

function readClaims(token: string) {
  const [payload, signature, extra] = token.split('.');
  if (payload === undefined || signature === undefined || extra !== undefined || payload === '')
    throw invalid('malformed');
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw invalid('malformed');
  }
  const parsed = ClaimsSchema.safeParse(json);
  if (!parsed.success) throw invalid('malformed');
  return { payload, signature, claims: parsed.data };
}

/**
 * The claims of `token` once its signature matches `key` (compared in constant time) and it has
 * not expired at `nowMs`. Throws SB_MEDIA_TOKEN_INVALID (malformed, forged, another channel's key)
 * or SB_MEDIA_TOKEN_EXPIRED — in that order, so that expiry is told only of a genuine token.
 */
export function verifyMediaToken(key: Buffer, token: string, nowMs: number): MediaClaims {
  const { payload, signature, claims } = readClaims(token);
  const expected = signatureOf(key, payload);
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid('bad signature');
  const expiresAtMs = claims.e * 1000;
  if (nowMs > expiresAtMs)
    throw new SwitchboardError('SB_MEDIA_TOKEN_EXPIRED', {
      message: 'the media link has expired',
      details: { expired_at: new Date(expiresAtMs).toISOString() },
    });
  return {
    channel: claims.c,
    media: {
      type: claims.t,
      ...(claims.f === undefined ? {} : { file_id: claims.f }),
      ...(claims.u === undefined ? {} : { url: claims.u }),
      ...(claims.n === undefined ? {} : { name: claims.n }),
      ...(claims.m === undefined ? {} : { mime_type: claims.m }),
      ...(claims.s === undefined ? {} : { size: claims.s }),
      ...(claims.i === undefined ? {} : { message_id: claims.i }),
    },
    expiresAtMs,
  };
}
