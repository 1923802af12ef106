import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configReference } from '../src/index.js';
import { readReference, replaceReference } from '../src/reference-page.js';

describe('configuration reference in docs/configuration.md', () => {
  it('is the table generated from the schema (run `npm run docs:config` after a schema change)', () => {
    const page = readFileSync(new URL('../../../docs/configuration.md', import.meta.url), 'utf8');
    expect(readReference(page)).toBe(configReference());
  });

  it('lists every section with its defaults', () => {
    const table = configReference();
    for (const row of [
      '`server.port` | number | `8080`',
      '`concurrency.pipeline` | number | `20`',
      '`queue.max_pending_per_session` | number | `500`',
      '`shutdown.drain_timeout` | duration | `30s`',
    ]) {
      expect(table).toContain(row);
    }
  });

  it('replaces only what lies between the markers', () => {
    const replaced = replaceReference(
      'before\n<!-- config-reference:start -->\nold\n<!-- config-reference:end -->\nafter',
    );
    expect(replaced.startsWith('before\n<!-- config-reference:start -->\n| key |')).toBe(true);
    expect(replaced.endsWith('<!-- config-reference:end -->\nafter')).toBe(true);
  });
});
