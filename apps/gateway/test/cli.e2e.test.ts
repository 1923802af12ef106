import { join } from 'node:path';
import { auditRecordFixture } from '@switchboard/contracts';
import { createSqliteStore } from '@switchboard/store-sqlite';
import { describe, expect, it } from 'vitest';
import { runCli, tempDir, writeConfig } from './serve-process.js';

describe('switchboard CLI', () => {
  describe('config check', () => {
    it('accepts the quick-start file', async () => {
      const result = await runCli(['config', 'check', '-c', 'config/switchboard.yaml'], {
        cwd: new URL('../../..', import.meta.url).pathname,
      });
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/ok — 1 channel\(s\), 1 pipeline\(s\), 1 rule\(s\)/);
    });

    it('exits non-zero naming the YAML path of every problem', async () => {
      const dir = tempDir();
      const path = writeConfig(
        dir,
        `concurrency: { pipeline: 0, colour: red }
routing:
  default: echo
  rules: [{ name: r, type: message_content, operator: regex, value: "([", pipeline: echo }]
`,
      );
      const result = await runCli(['config', 'check', '-c', path], { cwd: dir });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('SB_CONFIG_INVALID');
      expect(result.stderr).toContain('concurrency.pipeline');
      expect(result.stderr).toMatch(/concurrency: unrecognized key "colour"|concurrency\.colour/);
      expect(result.stderr).toContain('routing.rules[0].value: invalid regular expression');
    });

    it('names a missing ${VAR} with its path, for config check and for serve', async () => {
      const dir = tempDir();
      const path = writeConfig(dir, 'admin: { token: "${SWITCHBOARD_TEST_UNSET_TOKEN}" }\n');
      const env = { SWITCHBOARD_TEST_UNSET_TOKEN: undefined };
      for (const verb of [['config', 'check'], ['serve']]) {
        const result = await runCli([...verb, '-c', path], { cwd: dir, env });
        expect(result.code).not.toBe(0);
        expect(result.stderr).toContain('admin.token');
        expect(result.stderr).toContain('SWITCHBOARD_TEST_UNSET_TOKEN');
      }
    });

    it('names a missing file', async () => {
      const result = await runCli(['config', 'check', '-c', 'nope.yaml'], { cwd: tempDir() });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/SB_CONFIG_NOT_FOUND.*nope\.yaml/);
    });
  });

  describe('route', () => {
    const yaml = `pipelines: [{ id: echo, type: echo }, { id: support, type: echo }]
routing:
  default: echo
  rules:
    - { name: drop-ads, type: message_content, operator: contains, value: "buy now", pipeline: __discard__ }
    - { name: support-group, type: launcher_id, operator: eq, value: "-100123", pipeline: support }
    - { name: edits, type: event, events: [edited], pipeline: support }
`;

    /** `switchboard route -c <the config above> …flags`, run in a fresh folder. */
    function route(...flags: string[]) {
      const dir = tempDir();
      return runCli(['route', '-c', writeConfig(dir, yaml), ...flags], { cwd: dir });
    }

    it('prints the matched rule, the pipeline and why', async () => {
      const result = await route(
        '--channel',
        'api',
        '--chat-type',
        'group',
        '--chat-id=-100123',
        '--text',
        'hello',
      );
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/rule:\s+support-group/);
      expect(result.stdout).toMatch(/pipeline:\s+support/);
      expect(result.stdout).toMatch(/drop-ads: .*no/);
    });

    it('reports the default when no rule matches, and discards', async () => {
      const fallback = await route('--channel=api', '--chat-type=person', '--chat-id=1', '--text=hi');
      expect(fallback.stdout).toMatch(/rule:\s+default/);
      expect(fallback.stdout).toMatch(/pipeline:\s+echo/);
      const discard = await route(
        '--channel=api',
        '--chat-type=person',
        '--chat-id=1',
        '--text=buy now',
        '--json',
      );
      expect(JSON.parse(discard.stdout)).toMatchObject({ rule: 'drop-ads', pipeline: '__discard__' });
    });

    it('routes an event by the event rules only, and names an unrouted one ignored', async () => {
      const flags = ['--channel=api', '--chat-type=group', '--chat-id=-100123', '--text=hello'];
      const edit = await route(...flags, '--event=edited');
      expect(edit.stdout).toMatch(/rule:\s+edits/);
      expect(edit.stdout).toMatch(/support-group: a message rule: matches only messages, not edited events/);
      const reaction = await route(...flags, '--event=reaction');
      expect(reaction.stdout).toMatch(/pipeline:\s+__ignore_event__/);
      expect(reaction.stdout).toMatch(/result:\s+ignored \(unrouted_event\)/);
      const unknown = await route(...flags, '--event=typed');
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toMatch(/--event: expected one of edited, deleted, reaction, got "typed"/);
    });

    it('refuses missing flags and an unknown channel with a usage error', async () => {
      const missing = await route('--channel', 'api');
      expect(missing.code).toBe(2);
      expect(missing.stderr).toMatch(/--chat-type, --chat-id, --text/);
      const unknown = await route('--channel=tg', '--chat-type=person', '--chat-id=1', '--text=x');
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toMatch(/--channel: no channel "tg"/);
    });
  });

  describe('audit', () => {
    it('names a bad flag value', async () => {
      const dir = tempDir();
      const path = writeConfig(dir, `store: { kind: sqlite, path: ${dir}/data.db }\n`);
      const result = await runCli(['audit', '-c', path, '--outcome', 'exploded'], { cwd: dir });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/--outcome: expected one of completed\|discarded/);
    });

    it('reads the file audit.path names, not the store file', async () => {
      const dir = tempDir();
      const auditFile = createSqliteStore({ path: join(dir, 'audit.db') });
      await auditFile.auditLog.append(auditRecordFixture(1));
      auditFile.close();
      const path = writeConfig(
        dir,
        `store: { kind: sqlite, path: ${join(dir, 'data.db')} }\naudit: { path: ${join(dir, 'audit.db')} }\n`,
      );
      const result = await runCli(['audit', '-c', path, '--json'], { cwd: dir });
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout).items.map((item: { id: string }) => item.id)).toEqual([
        auditRecordFixture(1).id,
      ]);
    });
  });
});
