import fc from 'fast-check';
import { anyUnits, notAString } from './generated-text.js';

// Config generators of the generated-input scenario: a valid config to break at one known path,
// and YAML text built from the constructs parsers trip on.

// biome-ignore lint/suspicious/noExplicitAny: configs are edited freely at generated paths
type ConfigData = Record<string, any>;

/** A valid config as plain data; JSON text is YAML, so `JSON.stringify` writes the file. */
function validConfig(): ConfigData {
  return {
    server: { host: '127.0.0.1', port: 0 },
    admin: { token: 'admin' },
    store: { kind: 'memory' },
    shutdown: { drain_timeout: '5s' },
    channels: [
      { id: 'api', type: 'openapi', api_keys: ['key'] },
      { id: 'tg', type: 'telegram', token: 't', mode: 'webhook', webhook: { secret_token: 's' } },
    ],
    pipelines: [
      { id: 'echo', type: 'echo', retry: { max_attempts: 3 }, aggregation: { enabled: true, delay: '1s' } },
      { id: 'bot', type: 'http', url: 'http://127.0.0.1:9/answer', timeout: '10s' },
    ],
    routing: {
      default: 'echo',
      rules: [{ name: 'r', type: 'message_content', operator: 'contains', value: 'x', pipeline: 'bot' }],
    },
  };
}

/** `['channels', 0, 'token']` → `channels[0].token`, the style of every problem line. */
function pathText(path: ReadonlyArray<string | number>): string {
  return path
    .map((part, at) => (typeof part === 'number' ? `[${part}]` : at === 0 ? part : `.${part}`))
    .join('');
}

const garbageDuration = fc.constantFrom('soon', '5 parsecs', '-1s', '1.5.5s', '', 'ms', '1e999s');
/** Where one wrong value goes, and values that are wrong there. */
const CONFIG_MUTATIONS: Array<[ReadonlyArray<string | number>, fc.Arbitrary<unknown>]> = [
  [['server', 'port'], fc.oneof(fc.constantFrom('80x', -1, 70_000, 1.5, null, [80]))],
  [['server', 'host'], notAString.filter((value) => value !== null)],
  [['server', 'body_limit'], fc.constantFrom(-5, 0, 'lots', 1.5)],
  [['admin', 'token'], fc.oneof(fc.integer(), fc.array(fc.string(), { maxLength: 2 }), fc.constant({}))],
  [
    ['store', 'kind'],
    fc.string({ maxLength: 10 }).filter((kind) => !['sqlite', 'memory', 'redis'].includes(kind)),
  ],
  [['shutdown', 'drain_timeout'], garbageDuration],
  [
    ['channels', 0, 'type'],
    fc
      .string({ maxLength: 10 })
      .filter((type) => !['openapi', 'telegram', 'slack', 'discord'].includes(type)),
  ],
  [['channels', 0, 'prefix'], fc.oneof(fc.integer(), fc.boolean())],
  [
    ['channels', 0, 'api_keys'],
    fc.oneof(fc.integer(), fc.array(fc.integer(), { minLength: 1, maxLength: 2 })),
  ],
  [['channels', 0, 'wait_timeout'], garbageDuration],
  [['channels', 0, 'max_concurrent_requests'], fc.constantFrom(0, -1, 'many', 2.5)],
  [
    ['channels', 1, 'mode'],
    fc.string({ maxLength: 10 }).filter((mode) => mode !== 'polling' && mode !== 'webhook'),
  ],
  [['channels', 1, 'webhook', 'url'], fc.constantFrom('not a url', 5, 'ftp://x')],
  [['channels', 1, 'id'], fc.constant('api')],
  [['pipelines', 0, 'timeout'], garbageDuration],
  [['pipelines', 0, 'retry', 'max_attempts'], fc.constantFrom(0, -1, 'x', 1.5)],
  [['pipelines', 0, 'aggregation', 'delay'], garbageDuration],
  [
    ['pipelines', 0, 'busy_mode'],
    fc.string({ maxLength: 8 }).filter((mode) => mode !== 'queue' && mode !== 'collect'),
  ],
  [['pipelines', 1, 'url'], fc.constantFrom('ftp://x', 5, '', 'http//missing-colon')],
  [
    ['routing', 'default'],
    fc.string({ minLength: 1, maxLength: 10 }).filter((id) => id !== 'echo' && id !== 'bot'),
  ],
  [
    ['routing', 'rules', 0, 'operator'],
    fc
      .string({ maxLength: 8 })
      .filter((op) => !['eq', 'neq', 'contains', 'not_contains', 'starts_with', 'regex'].includes(op)),
  ],
  [
    ['routing', 'rules', 0, 'pipeline'],
    fc.string({ minLength: 1, maxLength: 10 }).filter((id) => !['echo', 'bot', '__discard__'].includes(id)),
  ],
];

function setAt(target: ConfigData, path: ReadonlyArray<string | number>, value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) node = node[key];
  node[path[path.length - 1] as string] = value;
}

/** A valid config with one wrong value: where it is (`channels[0].token`) and the YAML text. */
export const oneWrongValue: fc.Arbitrary<{ where: string; text: string }> = fc
  .integer({ min: 0, max: CONFIG_MUTATIONS.length - 1 })
  .chain((at) => {
    const [path, bad] = CONFIG_MUTATIONS[at] as [ReadonlyArray<string | number>, fc.Arbitrary<unknown>];
    return bad.map((value) => {
      const config = validConfig();
      setAt(config, path, value);
      return { where: pathText(path), text: JSON.stringify(config, null, 2) };
    });
  });

/** YAML made of the pieces parsers trip on: anchors, aliases, tags, merges, flow, `${…}`. */
export const yamlText = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        'server:',
        '  port: 8080',
        'channels:',
        '- id: api',
        '  type: openapi',
        'pipelines: [',
        ']',
        '{',
        '}',
        'routing: { default: echo }',
        'a: &a [1, 2]',
        'b: *a',
        'c: *missing',
        '<<: *a',
        '? [x]',
        ': y',
        '!!binary eA==',
        'x: !!js/function "f"',
        'token: ${SB_MISSING}',
        'token: ${',
        'v: $${X}',
        '---',
        '...',
        '%YAML 1.1',
        '\t- tab',
        '"\\ud800": 1',
        'k: "\\x00"',
        '- - - -',
        '&anchor',
        '*alias',
        '|',
        '>-',
      ),
      anyUnits(20),
    ),
    { maxLength: 12 },
  )
  .map((lines) => lines.join('\n'));

/** A billion-laughs document: a few lines that expand to millions of nodes. */
export const ALIAS_BOMB = [
  'a: &a [x, x, x, x, x, x, x, x, x]',
  'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]',
  'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]',
  'd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]',
  'e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]',
].join('\n');
