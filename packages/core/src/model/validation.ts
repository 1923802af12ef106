import type { z } from 'zod';
import { type ErrorCode, SwitchboardError } from './errors.js';

/** Renders a zod issue path as `routing.rules[2].value`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out;
}

/** One `path: problem` line per issue, every issue at once. */
export function formatIssues(error: z.ZodError, prefix: readonly PropertyKey[] = []): string[] {
  return error.issues.map((issue) => {
    const path = formatPath([...prefix, ...issue.path]);
    return path === '' ? issue.message : `${path}: ${issue.message}`;
  });
}

/**
 * Parses `input` with `schema`; on failure throws a SwitchboardError with `code` whose message
 * lists every problem as `path: problem` and whose details hold the same lines.
 */
export function parseOrThrow<S extends z.ZodType>(
  schema: S,
  input: unknown,
  code: ErrorCode,
  what: string,
): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const problems = formatIssues(result.error);
  throw new SwitchboardError(code, {
    message: `${what}:\n  ${problems.join('\n  ')}`,
    details: { problems },
  });
}
