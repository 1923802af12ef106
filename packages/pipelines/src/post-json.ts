import { SwitchboardError } from '@switchboard/core';
import type { Dispatcher } from 'undici';

/** What a remote endpoint answered: its status and headers, the body still to be read. */
export interface RemoteAnswer {
  status: number;
  headers: Dispatcher.ResponseData['headers'];
  /** Read it whole (`text()`, `json()`) or as chunks (`for await`); `discard` what is left unread. */
  body: Dispatcher.ResponseData['body'];
}

/** Redirects followed (307/308 keep the POST; fetch followed up to 20). */
const MAX_REDIRECTS = 3;
/** Largest answer read, decompressed: far beyond any reply, short of exhausting memory. */
export const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

type Client = { request: typeof import('undici').request; agent: Dispatcher };
// Loaded by the first call, so a process that only reads a config naming a pipeline does not pay
// for the client; one keep-alive pool per origin, shared by every pipeline.
let client: Promise<Client> | undefined;

function connect(): Promise<Client> {
  client ??= import('undici').then(
    ({ Agent, interceptors, request }) => ({
      request,
      // Redirected like fetch (a cross-origin hop drops the authorization).
      agent: new Agent({ headersTimeout: 0, bodyTimeout: 0, maxResponseSize: MAX_RESPONSE_BYTES }).compose(
        interceptors.redirect({ maxRedirections: MAX_REDIRECTS }),
      ),
    }),
    (error: unknown) => {
      // A failed load (EMFILE) is tried again by the next call, not kept for good.
      client = undefined;
      throw error;
    },
  );
  return client;
}

/**
 * POSTs a JSON body with undici's `request` on a keep-alive agent. Chosen over `fetch` (and the
 * OpenAI SDK built on it) because a call costs a third of the CPU: no `Request`, web streams or
 * header objects per call (docs/BENCHMARKS.md §7). Waiting for headers and for body chunks has no
 * limit of its own (fetch's was 300 s): the run's `signal` (the pipeline's `timeout`, a shutdown)
 * bounds the call. Asks for an uncompressed answer (`accept-encoding: identity` unless the
 * caller's headers say otherwise) and refuses a compressed one with SB_PIPELINE_FAILED naming its
 * encoding, fatal. Rejects when no answer came (refused, reset, aborted, too large); any status
 * resolves.
 */
export async function postJson(
  pipeline: string,
  url: string,
  request: { headers: Record<string, string>; body: string; signal: AbortSignal },
): Promise<RemoteAnswer> {
  const { request: send, agent } = await connect();
  const { statusCode, headers, body } = await send(url, {
    method: 'POST',
    dispatcher: agent,
    headers: { 'accept-encoding': 'identity', ...request.headers },
    body: request.body,
    signal: request.signal,
  });
  const encoding = headerOf(headers, 'content-encoding')?.trim().toLowerCase();
  if (encoding !== undefined && encoding !== '' && encoding !== 'identity') {
    discard(body);
    throw new SwitchboardError('SB_PIPELINE_FAILED', {
      message: `pipeline ${pipeline}: the endpoint answered compressed (content-encoding: ${encoding}), which is not read; remove any Accept-Encoding from the pipeline's headers`,
      details: { pipeline, content_encoding: encoding },
    });
  }
  return { status: statusCode, headers, body };
}

/**
 * Frees the connection of a body left unread (or half read): destroyed, its abort error has
 * nobody left to tell, so it is not thrown as unhandled. A body read to its end is untouched.
 */
export function discard(body: RemoteAnswer['body']): void {
  body.on('error', () => {});
  body.destroy();
}

/** A header's value (the first one when repeated), undefined when absent. */
export function headerOf(headers: RemoteAnswer['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}
