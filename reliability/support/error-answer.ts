import type { RawAnswer, RawRequest } from './raw-http.js';

/** The one error shape of every HTTP answer (STYLE "Errors"): `{error: {code, message, details?}}`. */
export interface ErrorAnswer {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

const SHOWN_CHARS = 300;

function shorten(text: string): string {
  return text.length <= SHOWN_CHARS ? text : `${text.slice(0, SHOWN_CHARS)}… (${text.length} chars)`;
}

function shown(value: string | Buffer): string {
  return shorten(typeof value === 'string' ? JSON.stringify(value) : `<bytes ${value.toString('hex')}>`);
}

/** A readable account of one exchange, for the message of a failed check. */
export function describeExchange(request: RawRequest | Buffer, answer: RawAnswer): string {
  const sent = Buffer.isBuffer(request)
    ? `raw ${shown(request)}`
    : [
        `${request.method} ${shown(request.target)}`,
        ...(request.headers ?? []).map(([name, value]) => `  ${name}: ${shown(value)}`),
        ...(request.body === undefined ? [] : [`  body: ${shown(request.body)}`]),
      ].join('\n');
  const got = answer.timedOut
    ? `no complete answer in time (status ${answer.status || 'none'})`
    : `${answer.status || 'no status'}${answer.error ? ` (${answer.error})` : ''} ${shorten(answer.body)}`;
  return `request:\n${sent}\nanswer: ${got}`;
}

/**
 * The error of a 4xx or 5xx answer, or a string saying how the answer breaks the shape (not
 * JSON, no `error` object, `code` or `message` not a string).
 */
export function errorOf(answer: RawAnswer): ErrorAnswer | string {
  let body: unknown;
  try {
    body = JSON.parse(answer.body);
  } catch {
    return 'the body is not JSON';
  }
  const error = (body as { error?: unknown } | null)?.error;
  if (typeof error !== 'object' || error === null) return 'the body has no `error` object';
  const { code, message, details } = error as Record<string, unknown>;
  if (typeof code !== 'string' || !code.startsWith('SB_')) return 'error.code is not an SB_ code';
  if (typeof message !== 'string' || message === '') return 'error.message is not a non-empty string';
  if (details !== undefined && (typeof details !== 'object' || details === null))
    return 'error.details is not an object';
  return { code, message, ...(details === undefined ? {} : { details: details as Record<string, unknown> }) };
}

/** True when the error's message or details name `field`. */
export function names(error: ErrorAnswer, field: string): boolean {
  return error.message.includes(field) || JSON.stringify(error.details ?? {}).includes(field);
}
