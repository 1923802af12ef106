import type { Dispatcher } from 'undici';

/** What a remote endpoint answered: its status and headers, the body still to be read. */
export interface RemoteAnswer {
  status: number;
  headers: Dispatcher.ResponseData['headers'];
  /** Read it whole (`text()`, `json()`) or as chunks (`for await`); `destroy()` what is left unread. */
  body: Dispatcher.ResponseData['body'];
}

// Loaded by the first call, so a process that only reads a config naming a pipeline does not pay
// for the client; one keep-alive pool per origin, shared by every pipeline.
let dispatcher: Promise<{ request: typeof import('undici').request; agent: Dispatcher }> | undefined;

/**
 * POSTs a JSON body with undici's `request` on a keep-alive agent. Chosen over `fetch` (and the
 * OpenAI SDK built on it) because a call costs a third of the CPU: no `Request`, web streams or
 * header objects per call (docs/BENCHMARKS.md §7). The agent sets no timeouts of its own: the
 * run's `signal` (the pipeline's `timeout`, a shutdown) is the only one, as it was with `fetch`.
 * Rejects when no answer came (refused, reset, aborted); any status resolves.
 */
export async function postJson(
  url: string,
  request: { headers: Record<string, string>; body: string; signal: AbortSignal },
): Promise<RemoteAnswer> {
  dispatcher ??= import('undici').then(({ Agent, request }) => ({
    request,
    agent: new Agent({ headersTimeout: 0, bodyTimeout: 0 }),
  }));
  const { request: send, agent } = await dispatcher;
  const { statusCode, headers, body } = await send(url, {
    method: 'POST',
    dispatcher: agent,
    headers: request.headers,
    body: request.body,
    signal: request.signal,
  });
  return { status: statusCode, headers, body };
}

/** A header's value (the first one when repeated), undefined when absent. */
export function headerOf(headers: RemoteAnswer['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}
