// Admin tokens across the file (docs/design.md §10): a request's token decides its scope — the
// whole gateway (`admin.token`, `admin.tokens`) or one tenant (`tenants[].admin_token`) — so no
// token may stand for two scopes. Read from the document as written (substituted), where each
// token still has its own path: the parsed `admin` section merges `token` into `tokens`.

/** One configured admin token and where it is written. */
interface PlacedToken {
  path: string;
  token: string;
}

function fieldOf(value: unknown, key: string): unknown {
  return value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
}

/** Every non-empty admin token of `document`, the global ones first, each with its path. */
function placedTokens(document: unknown): PlacedToken[] {
  const placed: PlacedToken[] = [];
  const add = (path: string, token: unknown) => {
    if (typeof token === 'string' && token !== '') placed.push({ path, token });
  };
  const admin = fieldOf(document, 'admin');
  add('admin.token', fieldOf(admin, 'token'));
  const tokens = fieldOf(admin, 'tokens');
  if (Array.isArray(tokens))
    for (const [index, entry] of tokens.entries())
      add(`admin.tokens[${index}].token`, fieldOf(entry, 'token'));
  const tenants = fieldOf(document, 'tenants');
  if (Array.isArray(tenants))
    for (const [index, tenant] of tenants.entries())
      add(`tenants[${index}].admin_token`, fieldOf(tenant, 'admin_token'));
  return placed;
}

/** Every HTTP channel API key of `document` (top level and tenants), each with its path. */
function placedApiKeys(document: unknown): PlacedToken[] {
  const placed: PlacedToken[] = [];
  const addChannels = (at: string, channels: unknown) => {
    if (!Array.isArray(channels)) return;
    for (const [index, channel] of channels.entries()) {
      const keys = fieldOf(channel, 'api_keys');
      if (!Array.isArray(keys)) continue;
      for (const [keyIndex, key] of keys.entries())
        if (typeof key === 'string' && key !== '')
          placed.push({ path: `${at}channels[${index}].api_keys[${keyIndex}]`, token: key });
    }
  };
  addChannels('', fieldOf(document, 'channels'));
  const tenants = fieldOf(document, 'tenants');
  if (Array.isArray(tenants))
    for (const [index, tenant] of tenants.entries())
      addChannels(`tenants[${index}].`, fieldOf(tenant, 'channels'));
  return placed;
}

/**
 * One `path: problem` line per tenant admin token that repeats an earlier admin token (the
 * global ones, or another tenant's) or an HTTP channel's API key, naming both paths and never
 * the token. Repeats among the global tokens alone are the `admin` schema's to report.
 */
export function adminTokenProblems(document: unknown): string[] {
  const first = new Map<string, string>();
  const problems: string[] = [];
  for (const { path, token } of placedTokens(document)) {
    const earlier = first.get(token);
    if (earlier === undefined) first.set(token, path);
    else if (path.startsWith('tenants['))
      problems.push(
        `${path}: the same token as ${earlier}: a token opens one scope, so give each tenant its own`,
      );
  }
  // An HTTP channel's API clients (maybe a public app) must not hold a tenant's admin scope.
  for (const { path, token } of placedApiKeys(document)) {
    const admin = first.get(token);
    if (admin?.startsWith('tenants['))
      problems.push(
        `${admin}: the same token as ${path}: an admin token must not be an API key of a channel`,
      );
  }
  return problems;
}
