import { formatPath, isSecretField } from '@switchboard/core';
import type { z } from 'zod';

// Turns zod issues into the `path: problem` lines of a config error, worded for someone editing
// YAML: `store.kind: expected one of sqlite|memory|redis, got "mongo"`.

// `scheme://user:password@` in database and Redis URLs.
const URL_PASSWORD = /(\/\/[^/@\s:]*):[^/@\s]*@/;

/**
 * What a value is, never what it holds: how the value of a field marked with `secretField` is
 * described, since config errors are printed, logged and answered by `POST /admin/reload`.
 */
function kindOf(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (value === null) return 'null';
  return typeof value === 'object' ? 'a mapping' : `a ${typeof value}`;
}

/** A short rendering of an offending value, with any URL password masked. */
export function showValue(value: unknown): string {
  if (value !== null && typeof value === 'object') return kindOf(value);
  const text = (JSON.stringify(value) ?? String(value)).replace(URL_PASSWORD, '$1:***@');
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}

function bound(
  issue: { origin: string; inclusive?: boolean },
  limit: number | bigint,
  relation: 'least' | 'most',
): string {
  switch (issue.origin) {
    case 'string':
      return relation === 'least' && limit === 1
        ? 'must not be empty'
        : `must have at ${relation} ${limit} characters`;
    case 'array':
    case 'set':
      return `must have at ${relation} ${limit} items`;
    default: {
      const symbol = relation === 'least' ? '>' : '<';
      return `must be ${symbol}${issue.inclusive === false ? '' : '='} ${limit}`;
    }
  }
}

function expectedOfUnion(branches: readonly (readonly z.core.$ZodIssue[])[]): string[] | null {
  const expected: string[] = [];
  for (const issues of branches) {
    const [only, ...rest] = issues;
    if (only === undefined || rest.length > 0 || only.path.length > 0) return null;
    if (only.code === 'invalid_type') expected.push(only.expected);
    else if (only.code === 'invalid_value') expected.push(only.values.map(String).join('|'));
    else return null;
  }
  return expected;
}

/**
 * The values that came from `${VAR}` substitutions. A problem line describes such a value by
 * its kind, as it does a secret field's: a variable often holds a secret written at the wrong
 * place (`admin: ${TOKEN}` instead of `admin: { token: ${TOKEN} }`), where no secret field marks
 * it. Numbers count by their text, since the schema reads `port: ${PORT}` as a number.
 */
export type EnvValues = ReadonlySet<string>;

function fromEnv(value: unknown, envValues: EnvValues): boolean {
  return (typeof value === 'string' || typeof value === 'number') && envValues.has(String(value));
}

/** `value` rendered, or only its kind when it came from the environment. */
function shownValue(value: unknown, envValues: EnvValues): string {
  return fromEnv(value, envValues) ? kindOf(value) : showValue(value);
}

// RE2's reasons quote the part of a pattern they fault: `invalid character class range: \`T-P\``.
const QUOTED_PART = /`([^`]+)`/g;

/**
 * `line` with every quoted environment value in it (whole or cut as `showValue` cuts it)
 * replaced by its kind: for messages worded elsewhere, which quote the value themselves
 * (`expected a number, got "…"`, the router's `invalid regular expression "…"`). Where a value
 * was quoted, the backquoted parts of it that a reason quotes go too.
 */
export function hideEnvValues(line: string, envValues: EnvValues): string {
  let hidden = line;
  for (const value of envValues) {
    for (const shown of new Set([JSON.stringify(value), showValue(value)])) {
      if (!hidden.includes(shown)) continue;
      hidden = hidden
        .replaceAll(shown, 'a string')
        .replace(QUOTED_PART, (quoted, part: string) => (value.includes(part) ? '`…`' : quoted));
    }
  }
  return hidden;
}

/**
 * The per-parse error map: zod consults it only for issues whose schema gave no message of its
 * own, so messages written in the schemas (durations, routing) win. It shows an offending value
 * unless the schema that raised the issue is secret or the value came from the environment.
 * It judges values rather than paths because zod words a union's branches before their issues
 * have a path.
 */
export function configErrorMap(envValues: EnvValues): z.core.$ZodErrorMap {
  const shownInput = (issue: z.core.$ZodRawIssue): string =>
    isSecretField(issue.inst) ? kindOf(issue.input) : shownValue(issue.input, envValues);
  return (issue) => {
    switch (issue.code) {
      case 'unrecognized_keys':
        return `unrecognized key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((key) => JSON.stringify(key)).join(', ')}`;
      case 'invalid_type':
        return issue.input === undefined
          ? `required (expected ${issue.expected})`
          : `expected ${issue.expected}, got ${shownInput(issue)}`;
      case 'invalid_value': {
        const expected =
          issue.values.length === 1
            ? showValue(issue.values[0])
            : `one of ${issue.values.map(String).join('|')}`;
        return `expected ${expected}, got ${shownInput(issue)}`;
      }
      case 'invalid_union': {
        if (typeof issue.discriminator === 'string') {
          // A variant whose discriminator has a default also matches `undefined`: not worth listing.
          const options = ((issue.options as unknown[] | undefined) ?? [])
            .filter((option) => option !== undefined)
            .map(String)
            .join('|');
          const got = (issue.input as Record<string, unknown> | undefined)?.[issue.discriminator];
          return got === undefined
            ? `required (one of ${options})`
            : `expected one of ${options}, got ${shownValue(got, envValues)}`;
        }
        const expected = expectedOfUnion(issue.errors);
        if (expected !== null) return `expected ${expected.join(' or ')}, got ${shownInput(issue)}`;
        // One branch accepted the type and failed later (`port: "80x"`): its complaint is the useful one.
        const typed = issue.errors.filter((branch) => branch.some((inner) => inner.code !== 'invalid_type'));
        const [only] = typed.length === 1 ? (typed[0] ?? []) : [];
        return only !== undefined && only.path.length === 0 ? only.message : undefined;
      }
      case 'too_small':
        return bound(issue, issue.minimum, 'least');
      case 'too_big':
        return bound(issue, issue.maximum, 'most');
      case 'invalid_format':
        return issue.format === 'regex' ? `must match ${issue.pattern}` : `must be a valid ${issue.format}`;
      default:
        return undefined;
    }
  };
}

/**
 * One line per issue: the YAML path (`(root)` for the document itself, as `${VAR}` problems
 * say), the problem and, unless the message already shows it, the offending value — only its
 * kind (`got a string`) under a secret field, which `isSecret` tells by the issue's path, or when
 * it came from the environment (`envValues`, also hidden where a schema's own message quotes
 * them). Parse with `{ error: configErrorMap(envValues), reportInput: true }`.
 */
export function problemLines(
  issues: readonly z.core.$ZodIssue[],
  isSecret: (path: readonly PropertyKey[]) => boolean,
  envValues: EnvValues,
): string[] {
  return issues.map((issue) => {
    const path = formatPath(issue.path);
    const shown = isSecret(issue.path) ? kindOf(issue.input) : shownValue(issue.input, envValues);
    // Custom issues of a refinement carry the whole object as input: only scalars are worth showing.
    const scalar = issue.input === null || ['string', 'number', 'boolean'].includes(typeof issue.input);
    const alreadyShown = issue.message.includes(', got ') || issue.message.includes(shown);
    const message = scalar && !alreadyShown ? `${issue.message}, got ${shown}` : issue.message;
    return `${path || '(root)'}: ${hideEnvValues(message, envValues)}`;
  });
}
