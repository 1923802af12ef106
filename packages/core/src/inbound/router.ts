import { createRequire } from 'node:module';
import type { RE2JS } from 're2js';
import { z } from 'zod';
import { SwitchboardError } from '../model/errors.js';
import { ChatTypeSchema, ELEMENT_TYPES, EVENT_TYPES, type InboundMessage } from '../model/message.js';
import { regexSizeProblem } from './regex-size.js';
import { formatIssues } from '../model/validation.js';

/**
 * The router (docs/design.md §2, LangBot's `resolve_pipeline_uuid`): an ordered rule list,
 * first match wins, no match → `routing.default`. Unlike LangBot, a bad rule (invalid regex,
 * unknown pipeline, unsupported operator) stops the load with its path instead of silently never
 * matching, and every rule is compiled once into a matcher so routing a message parses nothing.
 *
 * `regex` values are compiled by RE2JS (a pure JavaScript port of RE2), not by `RegExp`: routing
 * runs on every inbound message before admission, so a backtracking pattern such as
 * `^(\w+\s?)*$` would block the event loop for seconds on a short message. RE2
 * matches in time proportional to the text's length times the pattern's compiled size, never
 * exponential; the price is RE2 syntax, which has no backreferences or lookaround — such
 * patterns are refused at load. The pattern's size is bounded at load too (`regex-size.ts`:
 * a counted repetition compiles to a copy per count); the text's length is capped by its platform.
 */

/** The routing target that discards a message (recorded in the audit log). */
export const DISCARD = '__discard__';

/**
 * The routing target that hands the conversation to an operator (docs/design.md §2 "Handoff"):
 * the session enters handoff and the message waits in the operator inbox.
 */
export const HANDOFF = '__handoff__';

/**
 * The decision for an event (an edit, deletion or reaction) that no `event` rule routes: it is
 * ignored (`ignored/unrouted_event`), never a turn. Not a routing target a rule may name.
 */
export const IGNORE_EVENT = '__ignore_event__';

const OPERATORS = ['eq', 'neq', 'contains', 'not_contains', 'starts_with', 'regex'] as const;
type Operator = (typeof OPERATORS)[number];

/** Condition types compared as strings with any operator, and what each reads from a message. */
const STRING_SUBJECTS = {
  launcher_type: (message: InboundMessage) => message.chat.type,
  launcher_id: (message: InboundMessage) => message.chat.id,
  message_content: (message: InboundMessage) => message.text,
  channel: (message: InboundMessage) => message.channel,
  platform: (message: InboundMessage) => message.platform,
  sender_id: (message: InboundMessage) => message.sender.id,
} satisfies Record<string, (message: InboundMessage) => string>;
type StringSubject = keyof typeof STRING_SUBJECTS;

const CONDITION_TYPES = [...Object.keys(STRING_SUBJECTS), 'message_has_element', 'event'];

const OperatorSchema = z.enum(OPERATORS);

/** YAML reads an unquoted chat id such as `-100123` as a number; users should not have to quote ids. */
const StringValueSchema = z
  .union([z.string(), z.number()], { error: 'expected a string' })
  .refine(
    (value) => typeof value === 'string' || !Number.isInteger(value) || Number.isSafeInteger(value),
    'this number is too large to keep every digit; quote it',
  )
  .transform(String);

let re2js: typeof RE2JS | undefined;

/**
 * RE2JS, loaded by the first `regex` rule: most configs have none, and its quarter megabyte of
 * code cost every start its compiling.
 */
function re2(): typeof RE2JS {
  re2js ??= (createRequire(import.meta.url)('re2js') as typeof import('re2js')).RE2JS;
  return re2js;
}

/**
 * RE2's complaint without its `error parsing regexp: ` preamble, or a size bound the pattern
 * passes (`regexSizeProblem`), or null when `pattern` compiles within them.
 */
function regexProblem(pattern: string): string | null {
  // Outside the try: a library that fails to load is not the pattern's fault.
  const engine = re2();
  try {
    engine.compile(pattern);
    return regexSizeProblem(pattern);
  } catch (error) {
    const reason = (error as Error).message.replace(/^error parsing regexp: /, '');
    return `invalid regular expression ${JSON.stringify(pattern)} (${reason}; RE2 syntax: no backreferences or lookaround)`;
  }
}

/** Conditions compared as strings: ids, text, channel, platform. */
const StringConditionSchema = z
  .strictObject({
    type: z.literal(['launcher_id', 'message_content', 'channel', 'platform', 'sender_id']),
    operator: OperatorSchema,
    value: StringValueSchema,
  })
  .superRefine((condition, ctx) => {
    const problem = condition.operator === 'regex' ? regexProblem(condition.value) : null;
    if (problem !== null) ctx.addIssue({ code: 'custom', path: ['value'], message: problem });
  });

const LauncherTypeConditionSchema = z.strictObject({
  type: z.literal('launcher_type'),
  operator: OperatorSchema,
  value: ChatTypeSchema,
});

/** LangBot checks element presence only: eq = has, neq = lacks. */
const ElementConditionSchema = z.strictObject({
  type: z.literal('message_has_element'),
  operator: z.enum(['eq', 'neq'], { error: 'message_has_element supports only eq (has) and neq (lacks)' }),
  value: z.enum(ELEMENT_TYPES),
});

/**
 * Matches events (docs/design.md §2 "Events") of the listed types. A rule holding one matches
 * only events; a rule without one matches only messages, so that a `message_content` rule never
 * routes an edit by accident.
 */
const EventConditionSchema = z.strictObject({
  type: z.literal('event'),
  events: z.array(z.enum(EVENT_TYPES)).min(1, 'list at least one event type'),
});

function unknownType(issue: { code?: string; input?: unknown }): string | undefined {
  if (issue.code !== 'invalid_union') return undefined;
  const type = (issue.input as { type?: unknown } | undefined)?.type;
  const known = CONDITION_TYPES.join(', ');
  return type === undefined
    ? `missing condition type (known: ${known})`
    : `unknown condition type ${JSON.stringify(type)} (known: ${known})`;
}

/** One test on a message: `{ type, operator, value }`. */
export const RoutingConditionSchema = z.discriminatedUnion(
  'type',
  [StringConditionSchema, LauncherTypeConditionSchema, ElementConditionSchema, EventConditionSchema],
  { error: unknownType },
);
export type RoutingCondition = z.output<typeof RoutingConditionSchema>;

const RULE_FIELDS = {
  /** Unique; recorded in the audit log and shown by `switchboard route`. */
  name: z.string().min(1),
  /** A `pipelines[].id`, `__discard__` or `__handoff__`. */
  pipeline: z.string().min(1),
  /** When set, the rule applies only to messages of these channel ids. */
  channels: z.array(z.string().min(1)).min(1, 'list at least one channel, or leave channels out').optional(),
};

/**
 * A rule holds either one condition inline or `all: [conditions]`. The `all` variant is
 * discriminated by a missing `type`, so that a mistake in either form is reported on its own
 * field rather than as "matches no variant".
 */
const RuleSchema = z.discriminatedUnion(
  'type',
  [
    // safeExtend keeps the regex check of the string condition.
    StringConditionSchema.safeExtend(RULE_FIELDS),
    LauncherTypeConditionSchema.safeExtend(RULE_FIELDS),
    ElementConditionSchema.safeExtend(RULE_FIELDS),
    EventConditionSchema.safeExtend(RULE_FIELDS),
    z.strictObject({
      ...RULE_FIELDS,
      type: z.undefined().optional(),
      all: z
        .array(RoutingConditionSchema, {
          error: (issue) =>
            issue.input === undefined ? 'a rule needs type/operator/value or all: [conditions]' : undefined,
        })
        .min(1, 'list at least one condition'),
    }),
  ],
  { error: unknownType },
);
export type RoutingRule = z.output<typeof RuleSchema>;

/** Names identify rules in the audit log, so two rules may not share one. */
function checkUniqueNames(rules: unknown, ctx: z.core.$RefinementCtx<unknown>): void {
  if (!Array.isArray(rules)) return;
  const firstIndex = new Map<string, number>();
  rules.forEach((rule: unknown, index) => {
    const name = (rule as { name?: unknown } | null)?.name;
    if (typeof name !== 'string') return;
    const first = firstIndex.get(name);
    if (first === undefined) firstIndex.set(name, index);
    else {
      ctx.addIssue({
        code: 'custom',
        path: [index, 'name'],
        message: `duplicate rule name ${JSON.stringify(name)} (also rules[${first}])`,
      });
    }
  });
}

/** The `routing` section of the configuration. */
export const RoutingSchema = z.strictObject({
  /** The pipeline of messages no rule matches; `__discard__` discards them (still audited), `__handoff__` hands them to an operator. */
  default: z.string().min(1),
  rules: z
    .array(RuleSchema)
    // Runs even when a rule is malformed, so that every problem is reported in one pass.
    .superRefine(checkUniqueNames, { when: () => true })
    .default([]),
});
export type RoutingConfig = z.output<typeof RoutingSchema>;
export type RoutingConfigInput = z.input<typeof RoutingSchema>;

export interface RouteDecision {
  /** A pipeline id, `DISCARD`, `HANDOFF`, or `IGNORE_EVENT` for an event no rule routes. */
  pipeline: string;
  /** The matching rule's name; null when the default applied. */
  rule: string | null;
  /** True when a rule matched (LangBot's `routed_by_rule`: it bypasses the group mention policy). */
  routedByRule: boolean;
}

/** One rule checked by `Router.explain`. */
export interface RouteTraceStep {
  rule: string;
  matched: boolean;
  /** A short sentence, e.g. `message_content contains "buy now": yes`. */
  why: string;
}

export interface RouteExplanation {
  decision: RouteDecision;
  /** The rules checked in order, up to and including the one that matched. */
  trace: RouteTraceStep[];
}

export interface Router {
  /**
   * The pipeline for `message`: the first matching rule's, else the default; for an event no
   * rule routes, `IGNORE_EVENT`.
   */
  route(message: InboundMessage): RouteDecision;
  /** The same decision with the reason for each rule checked (for `switchboard route`). */
  explain(message: InboundMessage): RouteExplanation;
}

type Predicate = (message: InboundMessage) => boolean;

interface CompiledCondition {
  /** `type operator "value"`, for explanations. */
  label: string;
  test: Predicate;
}

interface CompiledRule {
  name: string;
  /** Frozen and shared by every message the rule routes. */
  decision: Readonly<RouteDecision>;
  channels: ReadonlySet<string> | null;
  /** True when the rule has an `event` condition: it then matches only events, else only messages. */
  forEvents: boolean;
  conditions: readonly CompiledCondition[];
  matches: Predicate;
}

function compileOperator(operator: Operator, expected: string): (actual: string) => boolean {
  switch (operator) {
    case 'eq':
      return (actual) => actual === expected;
    case 'neq':
      return (actual) => actual !== expected;
    case 'contains':
      return (actual) => actual.includes(expected);
    case 'not_contains':
      return (actual) => !actual.includes(expected);
    case 'starts_with':
      return (actual) => actual.startsWith(expected);
    case 'regex': {
      // A search anywhere in the text, like Python's re.search in LangBot; case-sensitive, no
      // flags. RE2JS's `test` keeps no state between messages and runs in time linear in the
      // text's length for a pattern of bounded size (the schema refused larger ones).
      const pattern = re2().compile(expected);
      return (actual) => pattern.test(actual);
    }
  }
}

function compileCondition(condition: RoutingCondition): CompiledCondition {
  if (condition.type === 'event') {
    const events = new Set<string>(condition.events);
    return {
      label: `event in [${condition.events.join(', ')}]`,
      test: (message) => message.event !== undefined && events.has(message.event.type),
    };
  }
  const label = `${condition.type} ${condition.operator} ${JSON.stringify(condition.value)}`;
  if (condition.type === 'message_has_element') {
    const { value } = condition;
    const has: Predicate = (message) => message.elements.some((element) => element.type === value);
    return { label, test: condition.operator === 'eq' ? has : (message) => !has(message) };
  }
  const subject = STRING_SUBJECTS[condition.type satisfies StringSubject];
  const compare = compileOperator(condition.operator, condition.value);
  return { label, test: (message) => compare(subject(message)) };
}

function compileRule(rule: RoutingRule): CompiledRule {
  const conditions = ('all' in rule ? rule.all : [rule]).map(compileCondition);
  const tests = conditions.map((condition) => condition.test);
  const [only] = tests;
  return {
    name: rule.name,
    decision: Object.freeze({ pipeline: rule.pipeline, rule: rule.name, routedByRule: true }),
    channels: rule.channels === undefined ? null : new Set(rule.channels),
    forEvents: ('all' in rule ? rule.all : [rule]).some((condition) => condition.type === 'event'),
    conditions,
    matches:
      tests.length === 1 && only !== undefined ? only : (message) => tests.every((test) => test(message)),
  };
}

function inScope(rule: CompiledRule, message: InboundMessage): boolean {
  return (
    rule.forEvents === (message.event !== undefined) &&
    (rule.channels === null || rule.channels.has(message.channel))
  );
}

/** Why `rule` does not apply to `message` at all, or null when it does. */
function outOfScope(rule: CompiledRule, message: InboundMessage): string | null {
  if (rule.forEvents && message.event === undefined) return 'an event rule: matches only events';
  if (!rule.forEvents && message.event !== undefined)
    return `a message rule: matches only messages, not ${message.event.type} events`;
  if (rule.channels !== null && !rule.channels.has(message.channel)) {
    return `channel scope [${[...rule.channels].join(', ')}] excludes ${JSON.stringify(message.channel)}`;
  }
  return null;
}

/**
 * Unknown pipeline targets, read from the raw input so that they are reported together with
 * the schema's problems even when other parts of a rule are malformed.
 */
function pipelineProblems(routing: unknown, known: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  const knownList = known.size === 0 ? 'none' : [...known].join(', ');
  const check = (pipeline: unknown, path: string) => {
    if (
      typeof pipeline === 'string' &&
      pipeline !== DISCARD &&
      pipeline !== HANDOFF &&
      !known.has(pipeline)
    ) {
      problems.push(`${path}: unknown pipeline ${JSON.stringify(pipeline)} (known: ${knownList})`);
    }
  };
  const { default: fallback, rules } = (routing ?? {}) as { default?: unknown; rules?: unknown };
  check(fallback, 'routing.default');
  if (Array.isArray(rules)) {
    rules.forEach((rule: unknown, index) => {
      check((rule as { pipeline?: unknown } | null)?.pipeline, `routing.rules[${index}].pipeline`);
    });
  }
  return problems;
}

/**
 * Validates `routing` against the schema and the configured pipeline ids and compiles it.
 * Throws SB_ROUTING_INVALID listing every problem as `routing.<path>: problem` (also in
 * `details.problems`).
 */
export function createRouter(routing: RoutingConfigInput, options: { pipelines: Iterable<string> }): Router {
  const parsed = RoutingSchema.safeParse(routing);
  const problems = [
    ...(parsed.success ? [] : formatIssues(parsed.error, ['routing'])),
    ...pipelineProblems(routing, new Set(options.pipelines)),
  ];
  if (!parsed.success || problems.length > 0) {
    throw new SwitchboardError('SB_ROUTING_INVALID', {
      message: `routing is invalid:\n  ${problems.join('\n  ')}`,
      details: { problems },
    });
  }

  const rules = parsed.data.rules.map(compileRule);
  const fallback: RouteDecision = Object.freeze({
    pipeline: parsed.data.default,
    rule: null,
    routedByRule: false,
  });
  const eventFallback: RouteDecision = Object.freeze({
    pipeline: IGNORE_EVENT,
    rule: null,
    routedByRule: false,
  });
  const fallbackOf = (message: InboundMessage) => (message.event === undefined ? fallback : eventFallback);

  return {
    route(message) {
      for (const rule of rules) {
        if (inScope(rule, message) && rule.matches(message)) return rule.decision;
      }
      return fallbackOf(message);
    },

    explain(message) {
      const trace: RouteTraceStep[] = [];
      for (const rule of rules) {
        const excluded = outOfScope(rule, message);
        if (excluded !== null) {
          trace.push({ rule: rule.name, matched: false, why: excluded });
          continue;
        }
        // Stops at the first failing condition, as `every` in `matches` does.
        const checked: string[] = [];
        let matched = true;
        for (const condition of rule.conditions) {
          matched = condition.test(message);
          checked.push(`${condition.label}: ${matched ? 'yes' : 'no'}`);
          if (!matched) break;
        }
        trace.push({ rule: rule.name, matched, why: checked.join('; ') });
        if (matched) return { decision: rule.decision, trace };
      }
      return { decision: fallbackOf(message), trace };
    },
  };
}
