// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR} strings are the syntax under test, not templates
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, parseConfig } from '../src/load-config.js';
import { ConfigSchema } from '../src/schema.js';
import { tenantOfChannel } from '../src/tenants.js';
import { thrown } from './thrown.js';
import { defaultTenantShare } from '@switchboard/core';

const ACME = `
tenants:
  - id: acme
    channels:
      - { id: acme-api, type: openapi, prefix: /acme }
    pipelines:
      - { id: acme-echo, type: echo }
    routing: { default: acme-echo }
`;

describe('tenants', () => {
  describe('when none is configured', () => {
    it('makes the top-level channels, pipelines and routing the tenant default', () => {
      const config = ConfigSchema.parse({});
      expect(config.tenants).toEqual([
        {
          id: 'default',
          channels: ['api'],
          pipelines: ['echo'],
          routing: { default: 'echo', rules: [] },
          share: defaultTenantShare('default'),
        },
      ]);
    });
  });

  describe('when tenants are listed', () => {
    const config = parseConfig(ACME);

    it('runs every tenant’s channels and pipelines, the default tenant’s first', () => {
      expect(config.channels.map((channel) => channel.id)).toEqual(['api', 'acme-api']);
      expect(config.pipelines.map((pipeline) => pipeline.id)).toEqual(['echo', 'acme-echo']);
    });

    it('keeps each tenant’s routing and the ids of its channels and pipelines', () => {
      expect(config.tenants).toEqual([
        {
          id: 'default',
          channels: ['api'],
          pipelines: ['echo'],
          routing: { default: 'echo', rules: [] },
          share: defaultTenantShare('default'),
        },
        {
          id: 'acme',
          channels: ['acme-api'],
          pipelines: ['acme-echo'],
          routing: { default: 'acme-echo', rules: [] },
          share: defaultTenantShare('acme'),
        },
      ]);
      expect(tenantOfChannel(config.tenants, 'acme-api')).toBe('acme');
      expect(tenantOfChannel(config.tenants, 'api')).toBe('default');
    });
  });

  describe('when ids or prefixes repeat across tenants', () => {
    it('refuses each repeat, naming both paths', () => {
      const error = thrown(() =>
        parseConfig(`
channels: [ { id: api, type: openapi } ]
pipelines: [ { id: echo, type: echo } ]
tenants:
  - id: acme
    channels:
      - { id: api, type: openapi, prefix: /acme }
      - { id: acme-2, type: openapi, prefix: /v1 }
    pipelines: [ { id: echo, type: echo } ]
    routing: { default: echo }
`),
      );
      expect(error.code).toBe('SB_CONFIG_INVALID');
      expect(error.details?.problems).toEqual([
        'tenants[0].channels[0].id: duplicate channel id "api" (also channels[0]): ids are unique across the file',
        'tenants[0].pipelines[0].id: duplicate pipeline id "echo" (also pipelines[0]): ids are unique across the file',
        `tenants[0].channels[1].prefix: prefix "/v1" is also channels[0]'s: give each openapi channel its own`,
      ]);
    });

    it('refuses a tenant id given twice, and the id default', () => {
      const error = thrown(() =>
        parseConfig(`
tenants:
  - { id: default, routing: { default: __discard__ } }
  - { id: acme, routing: { default: __discard__ } }
  - { id: acme, routing: { default: __discard__ } }
`),
      );
      expect(error.details?.problems).toEqual([
        'tenants[0].id: "default" is the tenant of the top-level channels, pipelines and routing: choose another id',
        'tenants[2].id: duplicate tenant id "acme" (also tenants[1])',
      ]);
    });
  });

  describe('when a tenant’s routing names what is not its own', () => {
    it('refuses another tenant’s pipeline and a handoff, naming the path; __discard__ is allowed', () => {
      const error = thrown(() =>
        parseConfig(`
tenants:
  - id: acme
    pipelines: [ { id: acme-echo, type: echo } ]
    routing:
      default: echo
      rules:
        - { name: spam, type: message_content, operator: contains, value: spam, pipeline: __discard__ }
        - { name: human, type: message_content, operator: contains, value: human, pipeline: __handoff__ }
`),
      );
      expect(error.details?.problems).toEqual([
        'tenants[0].routing.default: unknown pipeline "echo" (known: acme-echo); it is tenant "default"\'s, and a tenant\'s routing names only its own pipelines',
        "tenants[0].routing.rules[1].pipeline: a tenant's routing cannot hand off to an operator (__handoff__)",
      ]);
    });

    it('requires a routing of every tenant', () => {
      const error = thrown(() => parseConfig('tenants: [ { id: acme } ]'));
      expect(error.details?.problems).toEqual(['tenants[0].routing: required (expected object)']);
    });
  });

  describe('when a tenant sets its share of the pool', () => {
    it('gives the pool its concurrency, weight and max_pending; the others keep the default share', () => {
      const config = parseConfig(
        'tenants:\n  - { id: acme, concurrency: 4, weight: "3", max_pending: 2000, routing: { default: __discard__ } }\n' +
          '  - { id: bravo, routing: { default: __discard__ } }\n',
      );
      expect(config.tenants.map((tenant) => tenant.share)).toEqual([
        defaultTenantShare('default'),
        { id: 'acme', maxConcurrency: 4, weight: 3, maxPending: 2000 },
        defaultTenantShare('bravo'),
      ]);
    });

    it('refuses a share that is not a positive whole number, naming the key', () => {
      const error = thrown(() =>
        parseConfig(
          'tenants: [ { id: acme, concurrency: 0, weight: 1.5, max_pending: -1, routing: { default: __discard__ } } ]',
        ),
      );
      const problems = (error.details?.problems as string[] | undefined) ?? [];
      for (const key of ['concurrency', 'weight', 'max_pending'])
        expect(problems.some((problem) => problem.startsWith(`tenants[0].${key}:`))).toBe(true);
    });

    it('accepts it with store.kind redis, whose replicas hold the shares together', () => {
      const config = parseConfig(
        'store: { kind: redis, url: "redis://127.0.0.1:6379" }\naudit: { kind: postgres, url: "postgres://x@127.0.0.1/test" }\n' +
          'tenants: [ { id: acme, concurrency: 2, weight: 2, max_pending: 5, routing: { default: __discard__ } } ]',
      );
      expect(config.tenants.find((tenant) => tenant.id === 'acme')?.share).toEqual({
        id: 'acme',
        maxConcurrency: 2,
        weight: 2,
        maxPending: 5,
      });
    });
  });

  describe('when a tenant has an admin_token', () => {
    it('keeps it as the tenant’s adminToken, and "" as none', () => {
      const config = parseConfig(
        `${ACME}  - { id: bravo, admin_token: "\${BRAVO_TOKEN:-}", routing: { default: __discard__ } }\n`.replace(
          'routing: { default: acme-echo }',
          'routing: { default: acme-echo }\n    admin_token: acme-secret',
        ),
        { env: {} },
      );
      expect(config.tenants.map(({ id, adminToken }) => ({ id, adminToken }))).toEqual([
        { id: 'default', adminToken: undefined },
        { id: 'acme', adminToken: 'acme-secret' },
        { id: 'bravo', adminToken: undefined },
      ]);
      expect(config.secrets).toContain('acme-secret');
    });

    it('refuses a token given to two tenants or equal to a global admin token, naming both paths and never the token', () => {
      const error = thrown(() =>
        parseConfig(`
admin: { token: global-secret, tokens: [ { label: ops, token: ops-secret } ] }
tenants:
  - { id: acme, admin_token: acme-secret, routing: { default: __discard__ } }
  - { id: bravo, admin_token: acme-secret, routing: { default: __discard__ } }
  - { id: carol, admin_token: global-secret, routing: { default: __discard__ } }
  - { id: delta, admin_token: ops-secret, routing: { default: __discard__ } }
`),
      );
      expect(error.code).toBe('SB_CONFIG_INVALID');
      expect(error.details?.problems).toEqual([
        'tenants[1].admin_token: the same token as tenants[0].admin_token: a token opens one scope, so give each tenant its own',
        'tenants[2].admin_token: the same token as admin.token: a token opens one scope, so give each tenant its own',
        'tenants[3].admin_token: the same token as admin.tokens[0].token: a token opens one scope, so give each tenant its own',
      ]);
      expect(error.message).not.toMatch(/acme-secret|global-secret|ops-secret/);
    });

    it('refuses a token that is also an API key of an HTTP channel, anywhere in the file', () => {
      const error = thrown(() =>
        parseConfig(`
channels: [ { id: api, type: openapi, api_keys: [ public-key ] } ]
tenants:
  - { id: acme, admin_token: shared-key, routing: { default: __discard__ } }
  - id: bravo
    admin_token: public-key
    channels: [ { id: bravo-api, type: openapi, prefix: /bravo, api_keys: [ other, shared-key ] } ]
    routing: { default: __discard__ }
`),
      );
      expect(error.details?.problems).toEqual([
        'tenants[1].admin_token: the same token as channels[0].api_keys[0]: an admin token must not be an API key of a channel',
        'tenants[0].admin_token: the same token as tenants[1].channels[0].api_keys[1]: an admin token must not be an API key of a channel',
      ]);
      expect(error.message).not.toMatch(/shared-key|public-key/);
    });
  });

  describe('when tenants come from tenants_dir', () => {
    let directory: string | undefined;
    afterEach(() => {
      if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
    });

    /** A directory holding `files` (paths relative to it); returns its path. */
    function write(files: Record<string, string>): string {
      const root = mkdtempSync(join(tmpdir(), 'switchboard-tenants-'));
      directory = root;
      for (const [name, text] of Object.entries(files)) {
        mkdirSync(dirname(join(root, name)), { recursive: true });
        writeFileSync(join(root, name), text);
      }
      return root;
    }

    it('adds one tenant per YAML file, by file name, after those listed, with ${VAR} substituted', async () => {
      const root = write({
        'main.yaml': `${ACME}tenants_dir: \${TENANTS_DIR}\n`,
        'tenants/b.yml': 'id: bravo\nrouting: { default: __discard__ }\n',
        'tenants/a.yaml':
          'id: alpha\npipelines: [ { id: a-echo, type: echo } ]\nrouting: { default: a-echo }\n',
        'tenants/notes.txt': 'not a tenant',
      });
      const config = await loadConfig(join(root, 'main.yaml'), {
        env: { TENANTS_DIR: join(root, 'tenants') },
      });
      expect(config.tenants.map((tenant) => tenant.id)).toEqual(['default', 'acme', 'alpha', 'bravo']);
      expect(config.pipelines.map((pipeline) => pipeline.id)).toEqual(['echo', 'acme-echo', 'a-echo']);
      // Workers must not read them, like the main file: they hold tenants' credentials.
      expect(config.secretFiles).toEqual([join(root, 'tenants', 'a.yaml'), join(root, 'tenants', 'b.yml')]);
    });

    it('names a problem in a tenant file by the file', async () => {
      const root = write({
        'main.yaml': `${ACME}tenants_dir: \${TENANTS_DIR}\n`,
        'tenants/a.yaml':
          'id: alpha\nchannels: [ { id: acme-api, type: openapi, prefix: /alpha } ]\nrouting: { default: acme-echo }\n',
      });
      const file = join(root, 'tenants', 'a.yaml');
      const error = await loadConfig(join(root, 'main.yaml'), {
        env: { TENANTS_DIR: join(root, 'tenants') },
      }).then(
        () => undefined,
        (failure: unknown) => failure as { code?: string; details?: { problems?: string[] } },
      );
      expect(error?.code).toBe('SB_CONFIG_INVALID');
      expect(error?.details?.problems).toEqual([
        `${file}: channels[0].id: duplicate channel id "acme-api" (also tenants[0].channels[0]): ids are unique across the file`,
        `${file}: routing.default: unknown pipeline "acme-echo" (known: none); it is tenant "acme"'s, and a tenant's routing names only its own pipelines`,
      ]);
    });

    it('skips hidden files, follows a symlink within the folder (a mounted ConfigMap), and refuses one leading out of it', async () => {
      const root = write({
        'main.yaml': `${ACME}tenants_dir: \${TENANTS_DIR}\n`,
        'tenants/..data/a.yaml': 'id: alpha\nrouting: { default: __discard__ }\n',
        'tenants/.#b.yaml': 'an editor lock, not a tenant',
        'outside/secret.yaml': 'top-secret-value',
      });
      const tenants = join(root, 'tenants');
      symlinkSync(join(tenants, '..data', 'a.yaml'), join(tenants, 'a.yaml'));
      const config = await loadConfig(join(root, 'main.yaml'), { env: { TENANTS_DIR: tenants } });
      expect(config.tenants.map((tenant) => tenant.id)).toEqual(['default', 'acme', 'alpha']);

      symlinkSync(join(root, 'outside', 'secret.yaml'), join(tenants, 'z.yaml'));
      const error = await loadConfig(join(root, 'main.yaml'), { env: { TENANTS_DIR: tenants } }).then(
        () => undefined,
        (failure: unknown) => failure as { message: string; details?: { problems?: string[] } },
      );
      expect(error?.details?.problems).toEqual([
        `tenants_dir: cannot read ${join(tenants, 'z.yaml')}: not a file inside tenants_dir`,
      ]);
      expect(error?.message).not.toContain('top-secret-value');
    });

    it('refuses a directory it cannot read, naming tenants_dir', async () => {
      const root = write({ 'main.yaml': 'tenants_dir: ./no-such-directory-here\n' });
      const error = await loadConfig(join(root, 'main.yaml')).then(
        () => undefined,
        (failure: unknown) => failure as { code?: string; details?: { problems?: string[] } },
      );
      expect(error?.code).toBe('SB_CONFIG_INVALID');
      expect(error?.details?.problems?.[0]).toMatch(/^tenants_dir: cannot read the directory: ENOENT/);
    });
  });
});
