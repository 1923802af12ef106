/**
 * The caller's admin scope (`GET /admin/scope`, docs/design.md §10) and, for the whole gateway,
 * the tenant picked to look at: a tenant token sees its own tenant only, the global token every
 * tenant or the one it picks. Held here, read by each page when it loads; the shell re-mounts
 * the page when the pick changes.
 */
export interface Scope {
  /** The tenant the token is limited to; null for the whole gateway. */
  tenant: string | null;
  label: string;
  /** The tenants the caller may pick: every configured one, or its own. */
  tenants: string[];
}

let scope: Scope = { tenant: null, label: '', tenants: [] };
let picked: string | undefined;

/** Keeps the scope the admin API answered; forgets any tenant picked under another token. */
export function setScope(next: Scope): void {
  scope = next;
  picked = undefined;
}

export function currentScope(): Scope {
  return scope;
}

/** Picks one tenant to look at (the whole gateway only), or all of them with `undefined`. */
export function pickTenant(tenant: string | undefined): void {
  picked = scope.tenant === null ? tenant : undefined;
}

/** The tenant picked, for the `tenant` filter of the admin routes; none for a tenant token (its own is implied). */
export function pickedTenant(): string | undefined {
  return picked;
}

/** `path` with `tenant=` of the picked tenant added to its query, when one is picked. */
export function forPickedTenant(path: string): string {
  if (picked === undefined) return path;
  return `${path}${path.includes('?') ? '&' : '?'}tenant=${encodeURIComponent(picked)}`;
}
