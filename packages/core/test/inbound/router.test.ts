import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { describe, expect, it } from 'vitest';
import { isSwitchboardError } from '../../src/model/errors.js';
import type { ElementType, InboundMessageInput } from '../../src/model/message.js';
import {
  createRouter,
  DISCARD,
  IGNORE_EVENT,
  type RoutingConfigInput,
  RoutingSchema,
} from '../../src/inbound/router.js';

interface MessageFields {
  text?: string;
  chatType?: 'person' | 'group';
  chatId?: string;
  channel?: string;
  platform?: string;
  senderId?: string;
  elements?: InboundMessageInput['elements'];
  event?: InboundMessageInput['event'];
}

function message(fields: MessageFields = {}) {
  return inboundMessage({
    platform: fields.platform ?? 'telegram',
    channel: fields.channel ?? 'tg',
    chat: { type: fields.chatType ?? 'group', id: fields.chatId ?? '-100123' },
    sender: { id: fields.senderId ?? 'u1', name: 'Ada' },
    elements: fields.elements ?? [],
    text: fields.text ?? 'hello',
    ...(fields.event === undefined ? {} : { event: fields.event }),
  });
}

const PIPELINES = ['echo', 'assistant', 'support'];

function router(routing: RoutingConfigInput) {
  return createRouter(routing, { pipelines: PIPELINES });
}

/** The `path: problem` lines of the SB_ROUTING_INVALID error `load` throws. */
function problemsOf(load: () => unknown): string[] {
  try {
    load();
  } catch (error) {
    if (!isSwitchboardError(error, 'SB_ROUTING_INVALID')) throw error;
    return error.details?.problems as string[];
  }
  throw new Error('expected SB_ROUTING_INVALID');
}

/** How each string condition type puts `actual` on a message. */
const SUBJECTS: Record<string, (actual: string) => MessageFields> = {
  launcher_id: (actual) => ({ chatId: actual }),
  message_content: (actual) => ({ text: actual }),
  channel: (actual) => ({ channel: actual }),
  platform: (actual) => ({ platform: actual }),
  sender_id: (actual) => ({ senderId: actual }),
};

/** Per operator: a value, a subject it accepts and one it refuses. */
const OPERATOR_CASES = [
  { operator: 'eq', value: 'alpha', yes: 'alpha', no: 'alphabet' },
  { operator: 'neq', value: 'alpha', yes: 'alphabet', no: 'alpha' },
  { operator: 'contains', value: 'lph', yes: 'alpha', no: 'beta' },
  { operator: 'not_contains', value: 'lph', yes: 'beta', no: 'alpha' },
  { operator: 'starts_with', value: 'al', yes: 'alpha', no: 'beta-alpha' },
  // A search, not a full match (Python's re.search): the pattern may sit mid-string.
  { operator: 'regex', value: 'l[pq]h', yes: 'x-alpha-y', no: 'alpah' },
] as const;

const LAUNCHER_TYPE_CASES = [
  { operator: 'eq', value: 'group', yes: 'group', no: 'person' },
  { operator: 'neq', value: 'group', yes: 'person', no: 'group' },
  { operator: 'contains', value: 'person', yes: 'person', no: 'group' },
  { operator: 'not_contains', value: 'person', yes: 'group', no: 'person' },
  { operator: 'starts_with', value: 'group', yes: 'group', no: 'person' },
  { operator: 'regex', value: 'group', yes: 'group', no: 'person' },
] as const;

const ROUTING_TABLE = [
  ...Object.entries(SUBJECTS).flatMap(([type, subject]) =>
    OPERATOR_CASES.map(({ operator, value, yes, no }) => ({
      type,
      operator,
      value,
      matching: subject(yes),
      other: subject(no),
    })),
  ),
  ...LAUNCHER_TYPE_CASES.map(({ operator, value, yes, no }) => ({
    type: 'launcher_type',
    operator,
    value,
    matching: { chatType: yes } as MessageFields,
    other: { chatType: no } as MessageFields,
  })),
  {
    type: 'message_has_element',
    operator: 'eq',
    value: 'image',
    matching: { elements: [{ type: 'image', url: 'https://x/1.png' }] },
    other: { elements: [{ type: 'text', text: 'hello' }] },
  },
  {
    type: 'message_has_element',
    operator: 'neq',
    value: 'image',
    matching: { elements: [{ type: 'text', text: 'hello' }] },
    other: { elements: [{ type: 'image', url: 'https://x/1.png' }] },
  },
] as Array<{ type: string; operator: string; value: string; matching: MessageFields; other: MessageFields }>;

const ELEMENT_SAMPLES: Record<ElementType, NonNullable<InboundMessageInput['elements']>[number]> = {
  text: { type: 'text', text: 'hi' },
  image: { type: 'image' },
  voice: { type: 'voice' },
  file: { type: 'file', name: 'a.pdf' },
  mention: { type: 'mention', user_id: 'u2' },
  quote: { type: 'quote', message_id: '7' },
  location: { type: 'location', latitude: 52.52, longitude: 13.405 },
  command: { type: 'command', name: 'start' },
};

describe('createRouter', () => {
  describe('when a rule tests one condition', () => {
    it.each(ROUTING_TABLE)('$type $operator "$value" matches and refuses the right messages', (row) => {
      const subject = router({
        default: 'echo',
        rules: [
          {
            name: 'r',
            type: row.type,
            operator: row.operator,
            value: row.value,
            pipeline: 'assistant',
          } as never,
        ],
      });
      expect(subject.route(message(row.matching))).toEqual({
        pipeline: 'assistant',
        rule: 'r',
        routedByRule: true,
      });
      expect(subject.route(message(row.other))).toEqual({
        pipeline: 'echo',
        rule: null,
        routedByRule: false,
      });
    });

    it.each(Object.entries(ELEMENT_SAMPLES))(
      'message_has_element eq %s detects that element',
      (type, sample) => {
        const subject = router({
          default: 'echo',
          rules: [
            {
              name: 'has',
              type: 'message_has_element',
              operator: 'eq',
              value: type as ElementType,
              pipeline: 'assistant',
            },
          ],
        });
        const others = Object.values(ELEMENT_SAMPLES).filter((element) => element !== sample);
        expect(subject.route(message({ elements: [sample] })).pipeline).toBe('assistant');
        expect(subject.route(message({ elements: others })).pipeline).toBe('echo');
      },
    );
  });

  describe('when several rules match', () => {
    it('routes by the first one in the list', () => {
      const subject = router({
        default: 'echo',
        rules: [
          {
            name: 'first',
            type: 'message_content',
            operator: 'contains',
            value: 'help',
            pipeline: 'support',
          },
          { name: 'second', type: 'launcher_type', operator: 'eq', value: 'group', pipeline: 'assistant' },
        ],
      });
      expect(subject.route(message({ text: 'help me' }))).toEqual({
        pipeline: 'support',
        rule: 'first',
        routedByRule: true,
      });
      expect(subject.route(message({ text: 'hi' }))).toEqual({
        pipeline: 'assistant',
        rule: 'second',
        routedByRule: true,
      });
    });
  });

  describe('when no rule matches', () => {
    it('falls back to the default, not routed by a rule', () => {
      const subject = router({
        default: 'assistant',
        rules: [
          { name: 'ads', type: 'message_content', operator: 'contains', value: 'buy now', pipeline: 'echo' },
        ],
      });
      expect(subject.route(message({ text: 'hello' }))).toEqual({
        pipeline: 'assistant',
        rule: null,
        routedByRule: false,
      });
    });

    it('routes everything to the default when there are no rules', () => {
      expect(router({ default: 'echo' }).route(message())).toEqual({
        pipeline: 'echo',
        rule: null,
        routedByRule: false,
      });
    });
  });

  describe('when a rule targets __discard__', () => {
    it('returns DISCARD with the rule name', () => {
      const subject = router({
        default: 'echo',
        rules: [
          {
            name: 'drop-ads',
            type: 'message_content',
            operator: 'contains',
            value: 'buy now',
            pipeline: DISCARD,
          },
        ],
      });
      expect(subject.route(message({ text: 'please BUY now, buy now' }))).toEqual({
        pipeline: '__discard__',
        rule: 'drop-ads',
        routedByRule: true,
      });
    });

    it('accepts __discard__ as the default', () => {
      expect(router({ default: DISCARD }).route(message())).toEqual({
        pipeline: DISCARD,
        rule: null,
        routedByRule: false,
      });
    });
  });

  describe('when a message reports an event (an edit, a deletion, a reaction)', () => {
    const edited = { type: 'edited', message_id: '-100123:7' } as const;
    const reaction = { type: 'reaction', message_id: '-100123:7', emoji: '👍' } as const;
    const subject = router({
      default: 'echo',
      rules: [
        {
          name: 'any-hello',
          type: 'message_content',
          operator: 'contains',
          value: 'hello',
          pipeline: 'support',
        },
        { name: 'edits', type: 'event', events: ['edited'], pipeline: 'assistant' },
        {
          name: 'tg-reactions',
          all: [
            { type: 'event', events: ['reaction', 'deleted'] },
            { type: 'channel', operator: 'eq', value: 'tg' },
          ],
          pipeline: DISCARD,
        },
      ],
    });

    it('routes it by the first event rule listing its type, skipping message rules', () => {
      expect(subject.route(message({ text: 'hello again', event: edited }))).toEqual({
        pipeline: 'assistant',
        rule: 'edits',
        routedByRule: true,
      });
    });

    it('lets an event rule combine the event type with other conditions', () => {
      expect(subject.route(message({ event: reaction })).rule).toBe('tg-reactions');
      expect(subject.route(message({ channel: 'api', event: reaction })).pipeline).toBe(IGNORE_EVENT);
    });

    it('ignores an event no event rule routes, whatever the default', () => {
      expect(router({ default: 'echo' }).route(message({ event: edited }))).toEqual({
        pipeline: IGNORE_EVENT,
        rule: null,
        routedByRule: false,
      });
    });

    it('never routes a new message by an event rule', () => {
      expect(subject.route(message({ text: 'bye' }))).toEqual({
        pipeline: 'echo',
        rule: null,
        routedByRule: false,
      });
    });

    it('explains why a message rule was skipped for an event', () => {
      const { trace } = subject.explain(message({ event: edited }));
      expect(trace[0]).toEqual({
        rule: 'any-hello',
        matched: false,
        why: 'a message rule: matches only messages, not edited events',
      });
      expect(trace[1]).toEqual({ rule: 'edits', matched: true, why: 'event in [edited]: yes' });
    });

    it('refuses an event rule without event types, or with an unknown one', () => {
      const problems = (rules: unknown[]) => {
        try {
          router({ default: 'echo', rules } as RoutingConfigInput);
        } catch (error) {
          return (error as { details: { problems: string[] } }).details.problems;
        }
        return [];
      };
      expect(problems([{ name: 'e', type: 'event', events: [], pipeline: 'echo' }])).toEqual([
        'routing.rules[0].events: list at least one event type',
      ]);
      expect(problems([{ name: 'e', type: 'event', events: ['typed'], pipeline: 'echo' }])[0]).toMatch(
        /^routing\.rules\[0\]\.events\[0\]: /,
      );
    });
  });

  describe('when a rule lists all: conditions', () => {
    const subject = router({
      default: 'echo',
      rules: [
        {
          name: 'group-questions',
          all: [
            { type: 'launcher_type', operator: 'eq', value: 'group' },
            { type: 'message_content', operator: 'regex', value: '\\?$' },
            { type: 'message_has_element', operator: 'neq', value: 'image' },
          ],
          pipeline: 'assistant',
        },
      ],
    });

    it('matches when every condition holds', () => {
      expect(subject.route(message({ chatType: 'group', text: 'why?' })).rule).toBe('group-questions');
    });

    it.each([
      ['the chat type', { chatType: 'person', text: 'why?' }],
      ['the text', { chatType: 'group', text: 'why.' }],
      ['the elements', { chatType: 'group', text: 'why?', elements: [{ type: 'image' }] }],
    ] as Array<[string, MessageFields]>)('does not match when %s fails', (_what, fields) => {
      expect(subject.route(message(fields)).rule).toBeNull();
    });
  });

  describe('when a rule is scoped by channels', () => {
    const subject = router({
      default: 'echo',
      rules: [
        {
          name: 'tg-only',
          channels: ['tg', 'tg2'],
          type: 'message_content',
          operator: 'starts_with',
          value: '/ask',
          pipeline: 'assistant',
        },
      ],
    });

    it('applies to messages of the listed channels', () => {
      expect(subject.route(message({ channel: 'tg2', text: '/ask x' })).pipeline).toBe('assistant');
    });

    it('skips messages of other channels', () => {
      expect(subject.route(message({ channel: 'api', text: '/ask x' })).pipeline).toBe('echo');
    });
  });

  describe('when a regex would backtrack catastrophically in a backtracking engine', () => {
    // `^(\w+\s?)*$` took 0.5 s with RegExp on 27 characters, doubling per character, so
    // the 10,000-character text below would never finish there. No clock is read: under
    // RE2's linear-time guarantee the call simply returns.
    it('routes a 10,000-character adversarial text without backtracking', () => {
      const subject = router({
        default: 'echo',
        rules: [
          {
            name: 'words',
            type: 'message_content',
            operator: 'regex',
            value: '^(\\w+\\s?)*$',
            pipeline: 'support',
          },
        ],
      });
      expect(subject.route(message({ text: `${'a'.repeat(10_000)}!` })).pipeline).toBe('echo');
      expect(subject.route(message({ text: 'just some words' })).pipeline).toBe('support');
    });
  });

  describe('when a regex needs a backtracking engine', () => {
    it.each([
      ['a backreference', '(a)\\1'],
      ['a lookahead', 'buy(?= now)'],
      ['a lookbehind', '(?<=buy )now'],
    ])('refuses %s at load with the path of its value', (_feature, pattern) => {
      const problems = problemsOf(() =>
        router({
          default: 'echo',
          rules: [
            { name: 'bad', type: 'message_content', operator: 'regex', value: pattern, pipeline: 'echo' },
          ],
        }),
      );
      expect(problems).toEqual([
        expect.stringMatching(/^routing\.rules\[0\]\.value: invalid regular expression .*RE2 syntax/),
      ]);
    });
  });

  describe('when a regex is too large to match quickly', () => {
    // RE2's time grows with the text times the compiled pattern, and a counted repetition
    // compiles to one copy per count: `(?:\w+\s?){1000}$` took ~0.7 s on a 32 KiB message.
    const regexRule = (value: string) => ({
      name: 'big',
      type: 'message_content' as const,
      operator: 'regex' as const,
      value,
      pipeline: 'echo',
    });

    it.each([
      [
        'a counted repetition above {100}',
        '(?:\\w+\\s?){1000}$',
        'regular expression repeats {1000}, at most {100} (matching time grows with the size of the pattern)',
      ],
      ['a bounded range above {100}', 'a{2,101}', 'regular expression repeats {2,101}, at most {100}'],
      [
        'a pattern longer than 1,000 characters',
        'a'.repeat(1_001),
        'regular expression is 1001 characters long, at most 1000',
      ],
      [
        'nested repetitions that multiply past 1,000 characters written out',
        '((?:\\w+\\s?){100}){10}$',
        'regular expression is 10021 characters long with its counted repetitions written out, at most 1000',
      ],
      [
        'repetitions in a row that add up past 1,000 characters written out',
        '(?:\\w+\\s?){100}'.repeat(2),
        'regular expression is 2000 characters long with its counted repetitions written out, at most 1000',
      ],
    ])('refuses %s at load with the path of its value', (_case, pattern, problem) => {
      const problems = problemsOf(() => router({ default: 'echo', rules: [regexRule(pattern)] }));
      expect(problems).toEqual([expect.stringContaining(`routing.rules[0].value: ${problem}`)]);
    });

    it('refuses it inside all: with its nested path', () => {
      const problems = problemsOf(() =>
        router({
          default: 'echo',
          rules: [
            {
              name: 'nested',
              all: [{ type: 'sender_id', operator: 'regex', value: 'x{1000}' }],
              pipeline: 'echo',
            },
          ],
        }),
      );
      expect(problems).toEqual([
        expect.stringMatching(/^routing\.rules\[0\]\.all\[0\]\.value: regular expression repeats \{1000\}/),
      ]);
    });

    it.each([
      ['{100} of a 10-character group, 1,000 characters written out', '(?:\\w+\\s?){100}'],
      ['a 1,000-character pattern', 'b'.repeat(1_000)],
      [
        'braces that are no repetition, and repetitions inside classes and escapes',
        '[{1000}]\\{1000\\}x{,5}\\Q{1000}\\E',
      ],
    ])('accepts %s', (_case, pattern) => {
      const subject = router({ default: 'assistant', rules: [regexRule(pattern)] });
      expect(subject.route(message({ text: 'nothing like it' })).pipeline).toBe('assistant');
    });
  });

  describe('when a value is a YAML number', () => {
    it('compares it as a string', () => {
      const routing: RoutingConfigInput = {
        default: 'echo',
        rules: [
          { name: 'support-group', type: 'launcher_id', operator: 'eq', value: -100123, pipeline: 'support' },
        ],
      };
      expect(RoutingSchema.parse(routing).rules[0]).toMatchObject({ value: '-100123' });
      expect(router(routing).route(message({ chatId: '-100123' })).pipeline).toBe('support');
    });

    it('refuses integers too large to keep every digit', () => {
      const problems = problemsOf(() =>
        router({
          default: 'echo',
          rules: [{ name: 'dc', type: 'sender_id', operator: 'eq', value: 2 ** 60, pipeline: 'echo' }],
        }),
      );
      expect(problems).toEqual([
        'routing.rules[0].value: this number is too large to keep every digit; quote it',
      ]);
    });
  });

  describe('when the routing is invalid', () => {
    it('rejects an invalid regex with the path of its value', () => {
      const problems = problemsOf(() =>
        router({
          default: 'echo',
          rules: [
            { name: 'ok', type: 'message_content', operator: 'contains', value: '([', pipeline: 'echo' },
            { name: 'bad', type: 'message_content', operator: 'regex', value: '([', pipeline: 'echo' },
          ],
        }),
      );
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^routing\.rules\[1\]\.value: invalid regular expression "\(\[" \(.+\)$/);
    });

    it('rejects an invalid regex inside all: with its nested path', () => {
      const problems = problemsOf(() =>
        router({
          default: 'echo',
          rules: [
            {
              name: 'nested',
              all: [
                { type: 'launcher_type', operator: 'eq', value: 'group' },
                { type: 'sender_id', operator: 'regex', value: 'a{2,1}' },
              ],
              pipeline: 'echo',
            },
          ],
        }),
      );
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(
        /^routing\.rules\[0\]\.all\[1\]\.value: invalid regular expression "a\{2,1\}"/,
      );
    });

    it('rejects unknown pipelines in rules and in the default, naming the known ones', () => {
      const problems = problemsOf(() =>
        createRouter(
          {
            default: 'nope-default',
            rules: [{ name: 'r', type: 'launcher_type', operator: 'eq', value: 'group', pipeline: 'nope' }],
          },
          { pipelines: ['echo', 'assistant'] },
        ),
      );
      expect(problems).toEqual([
        'routing.default: unknown pipeline "nope-default" (known: echo, assistant)',
        'routing.rules[0].pipeline: unknown pipeline "nope" (known: echo, assistant)',
      ]);
    });

    it('rejects duplicate rule names', () => {
      const problems = problemsOf(() =>
        router({
          default: 'echo',
          rules: [
            { name: 'same', type: 'launcher_type', operator: 'eq', value: 'group', pipeline: 'echo' },
            { name: 'other', type: 'launcher_type', operator: 'eq', value: 'group', pipeline: 'echo' },
            { name: 'same', type: 'launcher_type', operator: 'eq', value: 'person', pipeline: 'echo' },
          ],
        }),
      );
      expect(problems).toEqual(['routing.rules[2].name: duplicate rule name "same" (also rules[0])']);
    });

    it('rejects message_has_element with an operator other than eq/neq', () => {
      const problems = problemsOf(() =>
        router({
          default: 'echo',
          rules: [
            {
              name: 'r',
              type: 'message_has_element',
              operator: 'contains',
              value: 'image',
              pipeline: 'echo',
            } as never,
          ],
        }),
      );
      expect(problems).toEqual([
        'routing.rules[0].operator: message_has_element supports only eq (has) and neq (lacks)',
      ]);
    });

    it('rejects an unknown element type and an unknown launcher type', () => {
      const problems = problemsOf(() =>
        router({
          default: 'echo',
          rules: [
            {
              name: 'a',
              type: 'message_has_element',
              operator: 'eq',
              value: 'sticker',
              pipeline: 'echo',
            } as never,
            { name: 'b', type: 'launcher_type', operator: 'eq', value: 'private', pipeline: 'echo' } as never,
          ],
        }),
      );
      expect(problems).toHaveLength(2);
      expect(problems[0]).toMatch(/^routing\.rules\[0\]\.value: /);
      expect(problems[1]).toMatch(/^routing\.rules\[1\]\.value: /);
    });

    it('rejects an unknown condition type and a rule without any condition', () => {
      const problems = problemsOf(() =>
        router({
          default: 'echo',
          rules: [
            { name: 'a', type: 'message_length', operator: 'eq', value: '3', pipeline: 'echo' } as never,
            { name: 'b', pipeline: 'echo' } as never,
            { name: 'c', all: [], pipeline: 'echo' },
          ],
        }),
      );
      expect(problems).toEqual([
        expect.stringMatching(
          /^routing\.rules\[0\]\.type: unknown condition type "message_length" \(known: /,
        ),
        'routing.rules[1].all: a rule needs type/operator/value or all: [conditions]',
        'routing.rules[2].all: list at least one condition',
      ]);
    });

    it('rejects a rule that mixes a condition with all:', () => {
      const problems = problemsOf(() =>
        router({
          default: 'echo',
          rules: [
            {
              name: 'mixed',
              type: 'launcher_type',
              operator: 'eq',
              value: 'group',
              all: [{ type: 'launcher_type', operator: 'eq', value: 'group' }],
              pipeline: 'echo',
            } as never,
          ],
        }),
      );
      expect(problems).toEqual([expect.stringMatching(/^routing\.rules\[0\]: .*"all"/)]);
    });

    it('reports every problem at once in the message and in details', () => {
      let thrown: unknown;
      try {
        createRouter(
          {
            default: 'missing',
            rules: [
              { name: 'a', type: 'message_content', operator: 'regex', value: '([', pipeline: 'echo' },
              { name: 'b', type: 'launcher_id', operator: 'eq', value: '1', pipeline: 'nope' },
              {
                name: 'a',
                type: 'message_has_element',
                operator: 'regex',
                value: 'image',
                pipeline: 'echo',
              } as never,
            ],
          },
          { pipelines: ['echo'] },
        );
      } catch (error) {
        thrown = error;
      }
      if (!isSwitchboardError(thrown, 'SB_ROUTING_INVALID')) throw new Error('expected SB_ROUTING_INVALID');
      const problems = thrown.details?.problems as string[];
      expect(problems.map((line) => line.slice(0, line.indexOf(':')))).toEqual([
        'routing.rules[0].value',
        'routing.rules[2].operator',
        'routing.rules[2].name',
        'routing.default',
        'routing.rules[1].pipeline',
      ]);
      for (const line of problems) expect(thrown.message).toContain(line);
    });
  });

  describe('explain', () => {
    const subject = router({
      default: 'echo',
      rules: [
        {
          name: 'slack-only',
          channels: ['sl'],
          type: 'launcher_type',
          operator: 'eq',
          value: 'group',
          pipeline: 'support',
        },
        {
          name: 'drop-ads',
          type: 'message_content',
          operator: 'contains',
          value: 'buy now',
          pipeline: DISCARD,
        },
        {
          name: 'group-questions',
          all: [
            { type: 'launcher_type', operator: 'eq', value: 'group' },
            { type: 'message_content', operator: 'regex', value: '\\?$' },
          ],
          pipeline: 'assistant',
        },
        { name: 'never-reached', type: 'launcher_type', operator: 'eq', value: 'group', pipeline: 'echo' },
      ],
    });

    it('gives the reason for each rule checked and stops at the first match', () => {
      const explained = subject.explain(message({ channel: 'api', chatType: 'group', text: 'why?' }));
      expect(explained).toEqual({
        decision: { pipeline: 'assistant', rule: 'group-questions', routedByRule: true },
        trace: [
          { rule: 'slack-only', matched: false, why: 'channel scope [sl] excludes "api"' },
          { rule: 'drop-ads', matched: false, why: 'message_content contains "buy now": no' },
          {
            rule: 'group-questions',
            matched: true,
            why: 'launcher_type eq "group": yes; message_content regex "\\\\?$": yes',
          },
        ],
      });
    });

    it('stops at the first failing condition of all: and ends on the default', () => {
      const explained = subject.explain(message({ channel: 'api', chatType: 'person', text: 'why?' }));
      expect(explained.decision).toEqual({ pipeline: 'echo', rule: null, routedByRule: false });
      expect(explained.trace.map((step) => step.why)).toEqual([
        'channel scope [sl] excludes "api"',
        'message_content contains "buy now": no',
        'launcher_type eq "group": no',
        'launcher_type eq "group": no',
      ]);
    });

    it('agrees with route', () => {
      for (const fields of [
        { channel: 'sl', chatType: 'group' },
        { text: 'buy now!' },
        { chatType: 'group', text: 'ok' },
        { chatType: 'person' },
      ] as MessageFields[]) {
        expect(subject.explain(message(fields)).decision).toEqual(subject.route(message(fields)));
      }
    });
  });
});
