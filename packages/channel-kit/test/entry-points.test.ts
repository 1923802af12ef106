import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const PACKAGE = fileURLToPath(new URL('..', import.meta.url));

/**
 * Imports `entry` in a fresh Node process (the TypeScript sources, through tsx) and returns the
 * URLs of the fastify and jose modules it loaded.
 */
async function heavyModulesLoadedBy(entry: string): Promise<string[]> {
  const hook = `data:text/javascript,${encodeURIComponent(
    `export async function resolve(specifier, context, next) {
      const result = await next(specifier, context);
      if (/\\/node_modules\\/(\\.pnpm\\/)?(fastify|jose)[@/]/.test(result.url)) console.log(result.url);
      return result;
    }`,
  )}`;
  const script = `import { register } from 'node:module';
register(${JSON.stringify(hook)});
await import(${JSON.stringify(entry)});`;
  const { stdout } = await run(
    process.execPath,
    ['--conditions=development', '--import', 'tsx', '--input-type=module', '-e', script],
    { cwd: PACKAGE },
  );
  return stdout.split('\n').filter((line) => line !== '');
}

describe('entry points', () => {
  describe('when config loading imports @switchboard/channel-kit/options', () => {
    it('loads neither fastify nor jose', async () => {
      expect(await heavyModulesLoadedBy('@switchboard/channel-kit/options')).toEqual([]);
    });
  });

  describe('when a channel imports the root', () => {
    it('loads neither fastify (types only) nor jose', async () => {
      expect(await heavyModulesLoadedBy('@switchboard/channel-kit')).toEqual([]);
    });
  });

  describe('when a channel imports @switchboard/channel-kit/jwt', () => {
    it('loads jose', async () => {
      const loaded = await heavyModulesLoadedBy('@switchboard/channel-kit/jwt');
      expect(loaded.some((url) => url.includes('jose'))).toBe(true);
    });
  });
});
