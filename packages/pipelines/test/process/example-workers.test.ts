import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createProcessPipeline, ProcessPipelineOptionsSchema } from '../../src/process/process-pipeline.js';
import { contextOf, eventually, recordingLogger, turnOf } from './harness.js';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The first fenced block of `language` in the README's `process` section. */
function exampleOf(language: string): string {
  const section = README.slice(README.indexOf('## process'));
  const block = new RegExp(`^\`\`\`${language}\\n([\\s\\S]*?)^\`\`\``, 'm').exec(section)?.[1];
  if (block === undefined) throw new Error(`no ${language} example in the process section`);
  return block;
}

function hasPython(): boolean {
  try {
    execFileSync('python3', ['--version']);
    return true;
  } catch {
    return false;
  }
}

const EXAMPLES = [
  { name: 'Node', language: 'js', file: 'worker.mjs', command: process.execPath, args: ['worker.mjs'] },
  { name: 'Python', language: 'python', file: 'worker.py', command: 'python3', args: ['-u', 'worker.py'] },
];

describe('the example workers of the README', () => {
  for (const example of EXAMPLES) {
    describe(`when the ${example.name} example runs as a worker`, () => {
      it.skipIf(example.language === 'python' && !hasPython())(
        'answers turns with a per-session count and forgets a released session',
        async () => {
          const dir = mkdtempSync(join(tmpdir(), 'switchboard-example-'));
          writeFileSync(join(dir, example.file), exampleOf(example.language));
          const logger = recordingLogger();
          const pipeline = createProcessPipeline(
            'agent',
            ProcessPipelineOptionsSchema.parse({
              type: 'process',
              command: example.command,
              args: example.args,
              cwd: dir,
              idle_timeout: '300ms',
            }),
            { logger },
          );
          try {
            const texts = [];
            for (const text of ['hi', 'again']) {
              const result = await pipeline.run(turnOf('a', text), contextOf(logger));
              texts.push(result.replies[0]?.text);
            }
            expect(texts).toEqual(['#1: hi', '#2: again']);
            await eventually(() => pipeline.status?.().sessions === 0);
            const after = await pipeline.run(turnOf('a', 'back'), contextOf(logger));
            expect(after.replies).toEqual([{ text: '#1: back' }]);
          } finally {
            await pipeline.stop?.({ timeoutMs: 2000 });
          }
          // It exited by itself when its stdin closed: nobody had to kill it.
          expect(logger.lines.filter((line) => line.msg === 'killing worker')).toEqual([]);
          expect(logger.lines.find((line) => line.msg === 'worker exited')?.reason).toMatch(
            /exited with code 0/,
          );
        },
      );
    });
  }
});
