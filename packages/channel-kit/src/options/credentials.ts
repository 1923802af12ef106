import { secretField } from '@switchboard/core';
import { z } from 'zod';

/**
 * Whitespace in a credential is a paste or a file's trailing newline, never part of it: the
 * other side would never send it back, so every request would be refused. Refused at load,
 * before anything is locked out; the message never quotes the value.
 */
const noWhitespace = (schema: z.ZodString) =>
  schema.refine((value) => !/\s/.test(value), 'must not contain whitespace');

/**
 * A platform's token or key (bot tokens, signing secrets): marked secret, so that logs, audit
 * records and config errors never show it.
 */
export const platformSecret = () => secretField(noWhitespace(z.string().min(1, 'must not be empty')));

/**
 * A credential clients send back as `Authorization: Bearer <value>` (`admin.token`, `api_keys`);
 * empty means none. A header carries no whitespace inside a token and trims it around one, and
 * Node reads header bytes as Latin-1, so a value with whitespace or beyond visible ASCII could
 * never match.
 */
export const bearerCredential = () =>
  secretField(
    noWhitespace(z.string()).refine(
      (value) => /\s/.test(value) || /^[\x21-\x7e]*$/.test(value),
      'must hold visible ASCII characters only (a bearer token)',
    ),
  );
