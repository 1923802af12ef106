import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { eventually, tempDir } from './serve-process.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** The README sections a newcomer follows, whose shell examples show their output. */
const WALKTHROUGH = ['Quick start', 'Route and discard messages'];

/** A shell example of the README: the command as written and the output shown under it. */
interface Example {
  command: string;
  shown: string[];
}

/** The text of a `## heading` section, up to the next one. */
function sectionOf(readme: string, heading: string): string {
  const start = readme.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`README has no section "${heading}"`);
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

/**
 * The examples of a section's ```sh blocks that show their output: a command (lines ending in `\`
 * continue it) followed by the `# ` lines it prints. A command without such lines shows nothing.
 */
function examplesOf(section: string): Example[] {
  const examples: Example[] = [];
  for (const [, block = ''] of section.matchAll(/^```sh\n([\s\S]*?)^```/gm)) {
    let current: Example | undefined;
    let continued = false;
    for (const line of block.split('\n')) {
      if (continued && current !== undefined) {
        current.command += `\n${line}`;
      } else if (line.startsWith('#') && current !== undefined) {
        current.shown.push(line.replace(/^# ?/, ''));
      } else if (line.trim() === '') {
        current = undefined;
      } else {
        current = { command: line, shown: [] };
        examples.push(current);
      }
      continued = line.endsWith('\\');
    }
  }
  return examples.filter((example) => example.shown.length > 0);
}

/** What differs from run to run, replaced: ids (ULIDs), times, the port. */
function normalised(line: string): string {
  return line
    .replace(/\b[0-9A-HJKMNP-TV-Z]{26}\b/g, '<ulid>')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, '<time>')
    .replace(/^\[\d\d:\d\d:\d\d\.\d{3}\]/, '[<clock>]')
    .replace(/(127\.0\.0\.1|localhost):\d+/g, '$1:<port>');
}

/** A command's output as a terminal shows it, without the lines npm prints about the script it runs. */
function printed(stdout: string): string[] {
  return stdout.split('\n').filter((line) => line !== '' && !line.startsWith('> '));
}

/** The gateway's `listening` line, once printed (pretty logs, as in a terminal). */
function listeningLine(output: string): string | undefined {
  // The last piece may be a line still being written.
  return output
    .split('\n')
    .slice(0, -1)
    .find((line) => / INFO: listening \{/.test(line));
}

describe('quick start (README)', () => {
  describe('when a newcomer runs the README in a fresh clone', () => {
    it('serves the echo pipeline, and every example prints what the README shows', {
      timeout: 600_000,
    }, async () => {
      const clone = join(tempDir(), 'switchboard');
      execFileSync('git', ['clone', '--quiet', ROOT, clone]);
      const readme = readFileSync(join(clone, 'README.md'), 'utf8');
      const examples = WALKTHROUGH.flatMap((heading) => examplesOf(sectionOf(readme, heading)));
      // The hello request, the discarded one, the audit and the dry run.
      expect(examples.map(({ command }) => command.split(' ').slice(0, 3).join(' '))).toEqual([
        'curl -s localhost:8080/v1/messages',
        'curl -s localhost:8080/v1/messages',
        'npm run switchboard',
        'npm run switchboard',
      ]);

      // The README's run command, with PORT=0 so that a busy 8080 cannot fail the test, and the
      // readable logs a terminal gets.
      const child = spawn('npm', ['start'], {
        cwd: clone,
        env: { ...process.env, PORT: '0', CI: '', LOG_FORMAT: 'pretty' },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      child.stderr.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      try {
        const listening = await Promise.race([
          eventually(() => listeningLine(output), 540_000),
          exited.then((code) => {
            throw new Error(`npm start exited with ${code}:\n${output.slice(-3000)}`);
          }),
        ]);
        const shownListening = sectionOf(readme, 'Quick start')
          .split('\n')
          .find((line) => / INFO: listening \{/.test(line));
        expect(normalised(listening)).toBe(normalised(shownListening ?? '(none shown)'));

        const port = /127\.0\.0\.1:(\d+)/.exec(listening)?.[1];
        for (const { command, shown } of examples) {
          const stdout = execFileSync(
            'bash',
            ['-c', command.replaceAll('localhost:8080', `localhost:${port}`)],
            {
              cwd: clone,
              env: { ...process.env, CI: '' },
              encoding: 'utf8',
            },
          );
          expect({ command, printed: printed(stdout).map(normalised) }).toEqual({
            command,
            printed: shown.map(normalised),
          });
        }
      } finally {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
        await exited;
      }
    });
  });
});
