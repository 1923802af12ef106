import { existsSync, readFileSync, statSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Every Markdown file the repository tracks (a new one is checked without editing this test). */
const MARKDOWN = execFileSync('git', ['ls-files', '*.md'], { cwd: ROOT, encoding: 'utf8' })
  .split('\n')
  .filter((path) => path !== '');

/** Source files, whose comments may point at a section as `docs/<page>.md#anchor`. */
const SOURCES = execFileSync('git', ['ls-files', '*.ts', '*.mjs', '*.js', '*.yaml', '*.sh'], {
  cwd: ROOT,
  encoding: 'utf8',
})
  .split('\n')
  .filter((path) => path !== '');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, '')
    .replace(/[^\p{L}\p{N}\s-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(path: string): Set<string> {
  const text = readFileSync(path, 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  return new Set([...text.matchAll(/^#{1,6}\s+(.+)$/gm)].map(([, heading]) => anchorOf(heading as string)));
}

/** Relative link targets of a Markdown file: `[text](target)`, outside code blocks and spans. */
function relativeLinks(path: string): string[] {
  const text = readFileSync(path, 'utf8')
    .replace(/^```[\s\S]*?^```/gm, '')
    .replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map(([, target]) => target as string)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

describe('Markdown links', () => {
  it('finds the Markdown files', () => {
    expect(MARKDOWN).toContain('README.md');
  });

  it('every section a source file names (`docs/<page>.md#anchor`) exists', () => {
    const broken: string[] = [];
    for (const file of SOURCES) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      for (const [, path = '', anchor = ''] of text.matchAll(/\b((?:docs|bench)\/[\w./-]+\.md)#([\w-]+)/g)) {
        const target = join(ROOT, path);
        if (!existsSync(target) || !anchorsOf(target).has(anchor)) broken.push(`${file}: ${path}#${anchor}`);
      }
    }
    expect(broken).toEqual([]);
  });

  for (const file of MARKDOWN) {
    const links = relativeLinks(join(ROOT, file));
    if (links.length === 0) continue;
    it(`every relative link of ${file} resolves`, () => {
      const broken: string[] = [];
      for (const link of links) {
        const [pathPart = '', anchor] = link.split('#');
        const target = pathPart === '' ? join(ROOT, file) : resolve(dirname(join(ROOT, file)), pathPart);
        if (!existsSync(target)) {
          broken.push(`${link} (no such file)`);
          continue;
        }
        if (anchor !== undefined && statSync(target).isFile() && target.endsWith('.md')) {
          if (!anchorsOf(target).has(anchor.toLowerCase())) broken.push(`${link} (no such heading)`);
        }
      }
      expect(broken).toEqual([]);
    });
  }
});
