import { SwitchboardError } from '@switchboard/core';
import type { Dispatcher } from 'undici';
import { type AnswerBound, answerTooLarge } from './answer-size.js';

/** What a remote endpoint answered: its status and headers, the body still to be read. */
export interface RemoteAnswer {
  status: number;
  headers: Dispatcher.ResponseData['headers'];
  /** Read it whole (`textOf`) or as chunks (`for await`); `discard` what is left unread. */
  body: Dispatcher.ResponseData['body'];
}

/** Same-origin 307/308 redirects followed in a row. */
const MAX_REDIRECTS = 3;

type Client = { request: typeof import('./undici-exports.js').request; agent: Dispatcher };
// Loaded by the first call, so a process that only reads a config naming a pipeline does not pay
// for the client; one keep-alive pool per origin, shared by every pipeline.
let client: Promise<Client> | undefined;

function connect(): Promise<Client> {
  client ??= import('./undici-exports.js').then(
    ({ Agent, request }) => ({ request, agent: new Agent({ headersTimeout: 0, bodyTimeout: 0 }) }),
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
 * header objects per call (bench/HISTORY.md#whole-path-pass-3-the-model-call). Waiting for headers
 * and for body chunks has no
 * limit of its own (fetch's was 300 s): the run's `signal` (the pipeline's `timeout`, a shutdown)
 * bounds the call.
 *
 * A 307 or 308 to the same origin is followed (the POST and its headers as they were); any other
 * redirect is refused by name, fatal: another origin would receive the pipeline's secret headers
 * and signature, and a 301/302/303 turns the POST into a GET. The answer is asked for uncompressed
 * (`accept-encoding: identity` unless the caller's headers name an encoding) and a compressed 2xx
 * is refused by name, fatal. Rejects when no answer came (refused, reset, aborted); any other
 * status resolves.
 */
export async function postJson(
  pipeline: string,
  url: string,
  request: { headers: Record<string, string>; body: string; signal: AbortSignal },
): Promise<RemoteAnswer> {
  const { request: send, agent } = await connect();
  const askedEncoding = Object.keys(request.headers).some((name) => name.toLowerCase() === 'accept-encoding');
  const headers = askedEncoding ? request.headers : { 'accept-encoding': 'identity', ...request.headers };
  let target = url;
  for (let redirects = 0; ; redirects += 1) {
    const where = originAndPath(target);
    const options = { method: 'POST' as const, headers, body: request.body, signal: request.signal };
    // What undici's `request(url, { dispatcher })` does with an http(s) URL, without parsing it
    // again for every call; any other URL goes through it, to fail as it fails there.
    const answer =
      where === undefined
        ? await send(target, { ...options, dispatcher: agent })
        : await agent.request({ ...options, ...where });
    const { statusCode: status, body } = answer;
    if (status >= 300 && status < 400) {
      discard(body);
      const location = headerOf(answer.headers, 'location');
      const next = location === undefined ? undefined : urlOf(location, target);
      const followed = (status === 307 || status === 308) && next?.origin === new URL(target).origin;
      if (followed && next !== undefined && redirects < MAX_REDIRECTS) {
        target = next.href;
        continue;
      }
      throw new SwitchboardError('SB_PIPELINE_FAILED', {
        message: `pipeline ${pipeline}: the endpoint redirects (${status} to ${location ?? 'nowhere'}); configure the URL it redirects to`,
        details: { pipeline, status, location: location ?? null },
      });
    }
    const encoding = headerOf(answer.headers, 'content-encoding')?.trim().toLowerCase();
    if (status < 300 && encoding !== undefined && encoding !== '' && encoding !== 'identity') {
      discard(body);
      const advice = askedEncoding
        ? "remove Accept-Encoding from the pipeline's headers"
        : 'it was asked for none (accept-encoding: identity)';
      throw new SwitchboardError('SB_PIPELINE_FAILED', {
        message: `pipeline ${pipeline}: the endpoint answered compressed (content-encoding: ${encoding}), which is not read; ${advice}`,
        details: { pipeline, content_encoding: encoding },
      });
    }
    return { status, headers: answer.headers, body };
  }
}

/**
 * The whole body as text, up to `bound.maxBytes`: past it the body is cut (its connection closed,
 * what was read dropped) and SB_PIPELINE_ANSWER_TOO_LARGE thrown, fatal.
 */
export async function textOf(bound: AnswerBound, body: RemoteAnswer['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > bound.maxBytes) {
      discard(body);
      throw answerTooLarge(bound, 'the answer');
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Frees the connection of a body left unread (or half read): destroyed, its abort error has
 * nobody left to tell, so it is not thrown as unhandled. A body read to its end is untouched.
 */
export function discard(body: RemoteAnswer['body']): void {
  body.on('error', () => {});
  body.destroy();
}

/** How long, and how much of, the rest of a body whose answer is complete is read before it is cut. */
const DRAIN_GRACE_MS = 1000;
const DRAIN_MAX_BYTES = 128 * 1024;

/**
 * What is left of a body whose answer is complete, read in the background (and thrown away) so
 * that its connection can serve the next call; cut after `DRAIN_GRACE_MS` or `DRAIN_MAX_BYTES`,
 * whichever comes first (a server may keep it open, or keep writing).
 */
export function drainRest(body: RemoteAnswer['body']): void {
  body.on('error', () => {});
  if (body.closed) return;
  const cut = setTimeout(() => body.destroy(), DRAIN_GRACE_MS);
  cut.unref();
  body.once('close', () => clearTimeout(cut));
  let bytes = 0;
  body.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > DRAIN_MAX_BYTES) body.destroy();
  });
  body.resume();
}

/** Origins and paths of the http(s) URLs called, by URL: a few per pipeline. */
const targets = new Map<string, { origin: string; path: string }>();
const MAX_TARGETS = 256;

/**
 * The origin and path undici's `request` would call for `url` (throwing, as it does, when it is
 * no URL); undefined for a URL that is not http(s), which undici refuses.
 */
function originAndPath(url: string): { origin: string; path: string } | undefined {
  const known = targets.get(url);
  if (known !== undefined) return known;
  const parsed = new URL(url);
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return undefined;
  const where = {
    origin: parsed.origin,
    path: parsed.search ? `${parsed.pathname}${parsed.search}` : parsed.pathname,
  };
  if (targets.size < MAX_TARGETS) targets.set(url, where);
  return where;
}

/** `location` resolved against `base`, undefined when it is no URL. */
function urlOf(location: string, base: string): URL | undefined {
  try {
    return new URL(location, base);
  } catch {
    return undefined;
  }
}

/** A header's value (the first one when repeated), undefined when absent. */
export function headerOf(headers: RemoteAnswer['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}
