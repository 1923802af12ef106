import { readToken } from './admin-token.js';

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
  const headers: Record<string, string> = { accept: 'application/json' };
  const token = readToken();
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, {
    method: init.method ?? 'GET',
    headers,
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    ...(init.signal === undefined ? {} : { signal: init.signal }),
  });
  const text = await response.text();
  const body = text === '' ? null : (JSON.parse(text) as unknown);
  if (response.ok) return body as T;
  const error = (body as { error?: { code?: string; message?: string } } | null)?.error;
  const failure = new ApiError(
    response.status,
    error?.code ?? `HTTP_${response.status}`,
    error?.message ?? response.statusText,
  );
  if (response.status === 401 || response.status === 403) onRefused(failure);
  throw failure;
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
