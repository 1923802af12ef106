import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIOME = join(ROOT, 'node_modules', '.bin', 'biome');

/**
 * The imports Biome's `noImportCycles` reports under `folder` (`file:line`), with the rule as the
 * repository's biome.json sets it: an error, type-only imports counted. Other diagnostics are left
 * to `npm run lint`.
 */
function importCycles(folder: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    execFile(
      BIOME,
      ['lint', '--reporter=github', '--max-diagnostics=none', '.'],
      { cwd: folder, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout) => {
        // Biome exits 1 when it reports an error; anything else is a failure to run.
        if (error !== null && error.code !== 1) return reject(error);
        const reported = stdout.matchAll(
          /^::error title=lint\/suspicious\/noImportCycles,file=([^,]+),line=(\d+)/gm,
        );
        resolve([...reported].map(([, file, line]) => `${relative(folder, file as string)}:${line}`));
      },
    );
  });
}

describe('import cycles', () => {
  describe('when Biome lints the repository', () => {
    it('finds no import cycle', async () => {
      expect(await importCycles(ROOT)).toEqual([]);
    });
  });

  describe('when two files import each other, one of them for a type only', () => {
    let folder: string | undefined;
    afterEach(async () => {
      if (folder !== undefined) await rm(folder, { recursive: true, force: true });
    });

    it('reports both imports', async () => {
      folder = await mkdtemp(join(tmpdir(), 'import-cycles-'));
      await writeFile(join(folder, 'biome.json'), JSON.stringify({ extends: [join(ROOT, 'biome.json')] }));
      await writeFile(
        join(folder, 'model.ts'),
        "import { label } from './view.js';\nexport const name = label;\n",
      );
      await writeFile(
        join(folder, 'view.ts'),
        "import type { name } from './model.js';\nexport const label = 'x';\nexport type Name = typeof name;\n",
      );
      expect((await importCycles(folder)).sort()).toEqual(['model.ts:1', 'view.ts:1']);
    });
  });
});
