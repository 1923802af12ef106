import { SwitchboardError } from '@switchboard/core';
import { type FastifyRequest, errorCodes } from 'fastify';

/**
 * The JSON body parser of the gateway. Fastify's own refuses `__proto__` and
 * `constructor.prototype` keys (prototype poisoning) but answers them as `body: malformed JSON`,
 * though the JSON is valid. This one refuses them too — dropping them would silently change what
 * the client sent — naming where the key is: `body.meta.__proto__: key not allowed …`.
 */

/** Where a key that could reach an object's prototype sits in `value` (`body.a[0].__proto__`), or null. */
function forbiddenKeyPath(value: unknown): string | null {
  // Iterative: JSON.parse accepts nesting deeper than the call stack.
  const pending: Array<[unknown, string]> = [[value, 'body']];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [node, path] = next;
    if (typeof node !== 'object' || node === null) continue;
    if (Array.isArray(node)) {
      for (const [index, item] of node.entries()) pending.push([item, `${path}[${index}]`]);
      continue;
    }
    // JSON.parse makes `__proto__` an own data property, so it is listed here like any key.
    for (const [key, child] of Object.entries(node)) {
      if (key === '__proto__') return `${path}.${key}`;
      if (
        key === 'constructor' &&
        typeof child === 'object' &&
        child !== null &&
        Object.hasOwn(child, 'prototype')
      )
        return `${path}.constructor.prototype`;
      pending.push([child, `${path}.${key}`]);
    }
  }
  return null;
}

/**
 * Parses a JSON body; throws SB_HTTP_BAD_REQUEST (400) naming a `__proto__` or
 * `constructor.prototype` key, and fastify's own errors for an empty or malformed body (answered
 * as `body: empty…` and `body: malformed JSON`).
 */
export function parseJsonBody(text: string): unknown {
  if (text.length === 0) throw new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY();
  let value: unknown;
  try {
    // A byte order mark is not JSON, but fastify's parser accepted it.
    value = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch {
    throw new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY();
  }
  // Such a key decodes from text holding "proto" (`constructor.prototype` too) or a \u escape.
  const path = /proto|\\u/.test(text) ? forbiddenKeyPath(value) : null;
  if (path !== null) {
    throw new SwitchboardError('SB_HTTP_BAD_REQUEST', {
      message: `${path}: key not allowed (it could change an object's prototype)`,
      details: { path },
    });
  }
  return value;
}

/** `parseJsonBody` as a fastify content-type parser (`parseAs: 'string'`). */
export function jsonBodyParser(
  _request: FastifyRequest,
  body: string | Buffer,
  done: (error: Error | null, value?: unknown) => void,
): void {
  try {
    done(null, parseJsonBody(body.toString()));
  } catch (error) {
    done(error as Error);
  }
}
