import { ERROR_CODES, type ErrorCode, SwitchboardError, isSwitchboardError } from '@switchboard/core';
import type { FastifyError, FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify';
import type { ErrorBody } from './error-body.js';

/** An error answer before it is sent. */
export interface HttpError {
  status: number;
  /** An `SB_*` code; a string because a few HTTP answers have no core code yet. */
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
  retryAfterMs?: number;
}

/** Fastify's own 4xx codes whose default text does not say what to do. */
const FASTIFY_CLIENT_ERRORS: Record<string, { status: number; code: HttpError['code']; message: string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: {
    status: 400,
    code: 'SB_HTTP_BAD_REQUEST',
    message: 'body: malformed JSON',
  },
  FST_ERR_CTP_EMPTY_JSON_BODY: {
    status: 400,
    code: 'SB_HTTP_BAD_REQUEST',
    message: 'body: empty, but Content-Type is application/json; send a JSON object',
  },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 415,
    code: 'SB_HTTP_UNSUPPORTED_MEDIA_TYPE',
    message: 'unsupported Content-Type; send application/json',
  },
  FST_ERR_CTP_BODY_TOO_LARGE: {
    status: 413,
    code: 'SB_HTTP_PAYLOAD_TOO_LARGE',
    message: 'body: larger than the server accepts',
  },
};

/** Codes for other client errors, by status; anything else in 4xx counts as a bad request. */
const CLIENT_CODES: Record<number, HttpError['code']> = {
  401: 'SB_HTTP_UNAUTHORIZED',
  403: 'SB_HTTP_FORBIDDEN',
  404: 'SB_HTTP_NOT_FOUND',
  409: 'SB_HTTP_CONFLICT',
  413: 'SB_HTTP_PAYLOAD_TOO_LARGE',
  415: 'SB_HTTP_UNSUPPORTED_MEDIA_TYPE',
  429: 'SB_HTTP_TOO_MANY_REQUESTS',
};

/** `/text/0` → `.text[0]`: the JSON pointer of a validation issue in the repo's path style. */
function pointerToPath(pointer: string): string {
  return pointer
    .split('/')
    .filter((part) => part !== '')
    .map((part) =>
      /^\d+$/.test(part) ? `[${part}]` : `.${part.replaceAll('~1', '/').replaceAll('~0', '~')}`,
    )
    .join('');
}

/** One `path: problem` line per issue; each unknown key gets its own line naming it. */
function validationProblems(issues: readonly FastifySchemaValidationError[], context: string): string[] {
  return issues.flatMap((issue) => {
    const path = `${context}${pointerToPath(issue.instancePath)}`;
    const keys = issue.params.keys;
    // zod reports all unknown keys of an object in one `unrecognized_keys` issue.
    if (issue.keyword === 'unrecognized_keys' && Array.isArray(keys)) {
      return keys.map((key) => `${path}.${String(key)}: unknown key`);
    }
    return [`${path}: ${issue.message ?? 'invalid'}`];
  });
}

function isFastifyError(error: unknown): error is FastifyError {
  return error instanceof Error && typeof (error as FastifyError).code === 'string';
}

/**
 * Maps any error thrown while handling a request to the answer the client gets. Pure: it neither
 * logs nor sends. Internal errors map to a fixed message, so no stack, path or secret leaks.
 */
export function toHttpError(error: unknown): HttpError {
  if (isSwitchboardError(error)) {
    return {
      status: error.status,
      code: error.code,
      message: error.message,
      details: error.details,
      retryAfterMs: error.retryAfterMs,
    };
  }
  const validation = (error as Partial<FastifyError> | null)?.validation;
  if (Array.isArray(validation) && validation.length > 0) {
    const problems = validationProblems(validation, (error as FastifyError).validationContext ?? 'request');
    return {
      status: 400,
      code: 'SB_HTTP_BAD_REQUEST',
      message: `invalid request: ${problems.join('; ')}`,
      details: { problems },
    };
  }
  if (isFastifyError(error)) {
    const known = FASTIFY_CLIENT_ERRORS[error.code];
    if (known !== undefined) return { ...known };
  }
  if (error instanceof SyntaxError && (error as Partial<FastifyError>).statusCode === 400) {
    // A content-type parser that rethrows JSON.parse's error.
    return { status: 400, code: 'SB_HTTP_BAD_REQUEST', message: 'body: malformed JSON' };
  }
  const status = (error as Partial<FastifyError> | null)?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    // Fastify's client errors describe the request (bad URL, missing body…), never internals.
    const code = CLIENT_CODES[status] ?? 'SB_HTTP_BAD_REQUEST';
    const message = error instanceof Error ? error.message : ERROR_CODES.SB_HTTP_BAD_REQUEST.message;
    return { status, code, message };
  }
  return { status: 500, code: 'SB_HTTP_INTERNAL', message: 'internal error; see the gateway log' };
}

/** The JSON body of an error answer. */
export function errorBody(error: HttpError): ErrorBody {
  const { code, message, details } = error;
  return { error: details === undefined ? { code, message } : { code, message, details } };
}

/**
 * The fastify error handler of the gateway: one JSON shape `{ "error": { code, message,
 * details? } }` for every failure, `Retry-After` (whole seconds) when the error carries a wait,
 * and an ERROR log line for server errors, which a human must look at. Installed by the channel
 * on its own routes; the app installs it on the root server too.
 */
export function httpErrorHandler(error: Error, request: FastifyRequest, reply: FastifyReply): void {
  const answer = toHttpError(error);
  if (answer.status >= 500 && !isSwitchboardError(error, 'SB_DRAINING')) {
    request.log.error({ err: error, code: answer.code, reqId: request.id }, 'request failed');
  }
  if (answer.retryAfterMs !== undefined) {
    reply.header('retry-after', String(Math.max(1, Math.ceil(answer.retryAfterMs / 1000))));
  }
  void reply.code(answer.status).send(errorBody(answer));
}

/**
 * The fastify not-found handler of the gateway and of the channel's scope: an unknown route or
 * method is a 404 SB_HTTP_NOT_FOUND naming both, answered by the error handler in the one shape
 * rather than fastify's own `{message, error, statusCode}`.
 */
export async function notFoundHandler(request: FastifyRequest): Promise<never> {
  throw new SwitchboardError('SB_HTTP_NOT_FOUND', { message: `no route ${request.method} ${request.url}` });
}
