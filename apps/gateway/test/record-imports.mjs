// Preloaded with `node --import` by lazy-loading.e2e.test.ts: writes to $RECORD_IMPORTS_TO every
// module the process loaded, one path or URL a line — ES modules as the resolve hook (which runs
// on the loader thread) sees them, CommonJS modules from the require cache when the process exits.
import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

const target = process.env.RECORD_IMPORTS_TO;

if (isMainThread && target !== undefined) {
  register(import.meta.url);
  const { cache } = createRequire(import.meta.url);
  process.once('exit', () => appendFileSync(target, `${Object.keys(cache).join('\n')}\n`));
}

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  if (target !== undefined) appendFileSync(target, `${resolved.url}\n`);
  return resolved;
}
