/**
 * The admin token the operator typed, kept for this tab only (sessionStorage): closing the tab
 * forgets it, and no other site can read it.
 */
const KEY = 'switchboard.admin.token';

export function readToken(): string | null {
  return sessionStorage.getItem(KEY);
}

export function saveToken(token: string): void {
  sessionStorage.setItem(KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(KEY);
}
