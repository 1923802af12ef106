import { readFileSync, readdirSync } from 'node:fs';
import { parseConfig } from '@switchboard/config';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../../../', import.meta.url);
/** The pages whose ```yaml blocks are gateway configurations (docs/deploy-docker.md's are Compose files). */
const DOCS = [
  'README.md',
  'docs/channels.md',
  'docs/operations.md',
  'docs/pipelines.md',
  'docs/routing.md',
  ...readdirSync(new URL('docs/platforms/', ROOT)).map((name) => `docs/platforms/${name}`),
];

/** Every fenced ```yaml block of a Markdown file. */
function yamlBlocks(path: string): string[] {
  const text = readFileSync(new URL(path, ROOT), 'utf8');
  return [...text.matchAll(/^```yaml\n([\s\S]*?)^```/gm)].map(([, block]) => block as string);
}

/**
 * Any `${VAR}` a snippet uses gets a stand-in value, as a user's environment would supply; never
 * a `VAR_FILE` as well, which a user sets instead of `VAR`, not beside it.
 */
const env = new Proxy({} as Record<string, string | undefined>, {
  get: (_target, name) => (String(name).endsWith('_FILE') ? undefined : `value-of-${String(name)}`),
});

describe('documentation snippets', () => {
  for (const path of DOCS) {
    describe(path, () => {
      const blocks = yamlBlocks(path);
      it('has YAML examples', () => {
        expect(blocks.length).toBeGreaterThan(0);
      });
      blocks.forEach((block, index) => {
        it(`example ${index + 1} is a valid configuration`, () => {
          expect(() => parseConfig(block, { env, source: `${path} example ${index + 1}` })).not.toThrow();
        });
      });
    });
  }
});
