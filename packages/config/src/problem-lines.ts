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
  if (Array.isArray(value)) return 'a list';
  if (value !== null && typeof value === 'object') return 'a mapping';
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

/** The offending value of a raw issue, or only its kind when the schema that raised it is secret. */
function shownInput(issue: z.core.$ZodRawIssue): string {
  return isSecretField(issue.inst) ? kindOf(issue.input) : showValue(issue.input);
}

/**
 * Per-parse error map: zod consults it only for issues whose schema gave no message of its own,
 * so messages written in the schemas (durations, routing) win.
 */
export const configErrorMap: z.core.$ZodErrorMap = (issue) => {
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
          : `expected one of ${options}, got ${showValue(got)}`;
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

/**
 * One line per issue: the YAML path (`(root)` for the document itself, as `${VAR}` problems
 * say), the problem and, unless the message already shows it, the offending value — only its
 * kind (`got a string`) under a secret field, which `isSecret` tells by the issue's path. Parse with `{ error: configErrorMap, reportInput: true }`.
 */
export function problemLines(
  issues: readonly z.core.$ZodIssue[],
  isSecret: (path: readonly PropertyKey[]) => boolean,
): string[] {
  return issues.map((issue) => {
    const path = formatPath(issue.path);
    const shown = isSecret(issue.path) ? kindOf(issue.input) : showValue(issue.input);
    // Custom issues of a refinement carry the whole object as input: only scalars are worth showing.
    const scalar = issue.input === null || ['string', 'number', 'boolean'].includes(typeof issue.input);
    const alreadyShown = issue.message.includes(', got ') || issue.message.includes(shown);
    const message = scalar && !alreadyShown ? `${issue.message}, got ${shown}` : issue.message;
    return `${path || '(root)'}: ${message}`;
  });
}
