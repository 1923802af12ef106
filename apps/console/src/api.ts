import { readToken } from './admin-token.js';
import { EventStreamParser, type StreamEvent } from './event-stream-parser.js';

/** An answer of the admin API other than 2xx, with the `{ error: { code, message } }` it carried. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

type RefusalListener = (error: ApiError) => void;
let onRefused: RefusalListener = () => {};

/** Called on every 401 and 403, so the app can ask for a token (or explain why none will do). */
export function onAccessRefused(listener: RefusalListener): void {
  onRefused = listener;
}

/**
 * Calls an admin route with the stored token as bearer and resolves its JSON body; throws an
 * `ApiError` for any other status than 2xx (and tells the refusal listener about 401 and 403).
 * `signal` aborts the call (the fetch rejects with its `AbortError`).
 */
export async function api<T>(
  path: string,
  init: { method?: string; body?: unknown; signal?: AbortSignal } = {},
): Promise<T> {
  const headers = requestHeaders('application/json');
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, {
    method: init.method ?? 'GET',
    headers,
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    ...(init.signal === undefined ? {} : { signal: init.signal }),
  });
  if (!response.ok) throw await failure(response);
  const text = await response.text();
  return (text === '' ? null : JSON.parse(text)) as T;
}

/**
 * Reads an admin route's `text/event-stream` (with the bearer token, which `EventSource` cannot
 * send), calling `onEvent` for each event as it arrives. Resolves when the gateway ends the
 * stream; throws an `ApiError` as `api` does when it answers otherwise than 2xx. `signal` stops it.
 */
export async function readEventStream(
  path: string,
  onEvent: (event: StreamEvent) => void,
  signal: AbortSignal,
): Promise<void> {
  const response = await fetch(path, { headers: requestHeaders('text/event-stream'), signal });
  if (!response.ok) throw await failure(response);
  if (response.body === null) return;
  const parser = new EventStreamParser();
  const text = response.body.pipeThrough(new TextDecoderStream()).getReader();
  for (let piece = await text.read(); !piece.done; piece = await text.read()) {
    for (const event of parser.push(piece.value)) onEvent(event);
  }
}

/** The headers of an admin call: what it accepts, and the stored token as bearer. */
function requestHeaders(accept: string): Record<string, string> {
  const headers: Record<string, string> = { accept };
  const token = readToken();
  if (token !== null) headers.authorization = `Bearer ${token}`;
  return headers;
}

/** The `ApiError` of an answer other than 2xx; the refusal listener hears of 401 and 403. */
async function failure(response: Response): Promise<ApiError> {
  const text = await response.text();
  const body = (text === '' ? null : JSON.parse(text)) as {
    error?: { code?: string; message?: string };
  } | null;
  const error = new ApiError(
    response.status,
    body?.error?.code ?? `HTTP_${response.status}`,
    body?.error?.message ?? response.statusText,
  );
  if (response.status === 401 || response.status === 403) onRefused(error);
  return error;
}

/** A query string from the filled-in fields only. */
export function query(fields: Record<string, string | number | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) {
    if (value !== undefined && value !== '') params.set(name, String(value));
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}
