import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

/**
 * The folder of package `name` as a URL ending in `/`, found by name from `importMetaUrl`: the
 * way a package reaches the files it ships beside its code (migrations, Lua scripts), from its
 * sources, its build and the gateway's bundle alike — in the bundle `import.meta.url` is the
 * bundle's, so `new URL('../migrations/', import.meta.url)` would name the gateway's folder. The
 * package must export `./package.json`.
 */
export function packageFolder(name: string, importMetaUrl: string): URL {
  const manifest = createRequire(importMetaUrl).resolve(`${name}/package.json`);
  return new URL('./', pathToFileURL(manifest));
}
