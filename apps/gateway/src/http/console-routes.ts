import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join, relative, sep } from 'node:path';
import type { AuthHook } from '@switchboard/http';
import type { Logger } from '@switchboard/core';
import type { FastifyInstance } from 'fastify';

export interface ConsoleDeps {
  /**
   * Who may load the page: the admin check when no token is configured (loopback only), none
   * when one is — the page and its scripts hold no data; every route they call checks the token.
   */
  auth: AuthHook | undefined;
  logger: Logger;
  /** The built console (`apps/console/dist`); default: found through the `@switchboard/console` package. */
  assetsDir?: string;
}

interface Asset {
  body: Buffer;
  type: string;
  /** Hashed file names never change content: browsers keep them; the page itself is checked each time. */
  cacheControl: string;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

// Nothing but this origin: no CDN, no inline script, no framing (a click-jacked "Purge").
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/** Where `@switchboard/console` keeps its build, in the repository and in a deployed folder alike. */
function defaultAssetsDir(): string {
  const manifest = createRequire(import.meta.url).resolve('@switchboard/console/package.json');
  return join(dirname(manifest), 'dist');
}

/** Every file under `dir`, keyed by its URL path below /admin/ (`index.html`, `assets/index-….js`). */
function readAssets(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const name = relative(dir, path).split(sep).join('/');
    assets.set(name, {
      body: readFileSync(path),
      type: TYPES[extname(name)] ?? 'application/octet-stream',
      cacheControl: name.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
    });
  }
  return assets;
}

/**
 * The operator console at `/admin/` (docs/design.md §7): its built files, read once into memory
 * at start (a few dozen kB), so serving them costs no disk read and the message path nothing.
 * Without a build (`npm run build` not run) the gateway still starts, logs it, and `/admin/` is 404.
 */
export function registerConsoleRoutes(server: FastifyInstance, deps: ConsoleDeps): void {
  let assets: Map<string, Asset>;
  try {
    assets = readAssets(deps.assetsDir ?? defaultAssetsDir());
  } catch (err) {
    deps.logger.warn({ err }, 'console not served: its built assets are missing (run npm run build)');
    return;
  }
  const index = assets.get('index.html');
  if (index === undefined) {
    deps.logger.warn({}, 'console not served: index.html missing from its built assets');
    return;
  }

  server.register(async (console) => {
    if (deps.auth !== undefined) console.addHook('onRequest', deps.auth);
    // The page and its scripts hold no data: any admin scope may load them (docs/design.md §10).
    const config = { tenancy: 'tenant' } as const;
    console.get('/admin', { config, schema: { hide: true } }, async (_request, reply) =>
      reply.redirect('/admin/', 308),
    );
    console.get('/admin/', { config, schema: { hide: true } }, async (_request, reply) =>
      reply
        .headers({ ...SECURITY_HEADERS, 'content-type': index.type, 'cache-control': index.cacheControl })
        .send(index.body),
    );
    console.get<{ Params: { name: string } }>(
      '/admin/assets/:name',
      { config, schema: { hide: true } },
      async (request, reply) => {
        const asset = assets.get(`assets/${request.params.name}`);
        if (asset === undefined) return reply.callNotFound();
        return reply
          .headers({ ...SECURITY_HEADERS, 'content-type': asset.type, 'cache-control': asset.cacheControl })
          .send(asset.body);
      },
    );
  });
}
