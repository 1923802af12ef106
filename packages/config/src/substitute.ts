import { formatPath, SwitchboardError } from '@switchboard/core';

/** The environment variables `${VAR}` references read from. */
export type Env = Readonly<Record<string, string | undefined>>;

// `$${` (escape), `${NAME}` / `${NAME:-default}` (reference), or a `${` never closed.
const REFERENCE = /\$\$\{|\$\{([^}]*)\}|\$\{/g;
const BODY = /^([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?$/s;

/**
 * Replaces `${VAR}` and `${VAR:-default}` in every string scalar of a parsed YAML document;
 * `$${` stands for a literal `${`. It runs on the parsed tree rather than the raw text so that a
 * variable's value is always one string and can never inject YAML structure; numbers are
 * coerced later by the schema where a number is expected (`port: ${PORT:-8080}`).
 *
 * Mapping keys are left alone. Every problem is collected before throwing: unset variables
 * without a default → `SB_CONFIG_VARIABLE_MISSING`; a malformed reference (`${}`, `${A B}`, an
 * unclosed `${`) → `SB_CONFIG_INVALID`. Each line reads `channels[1].token: …`.
 */
export function substituteEnv(document: unknown, env: Env, source = 'configuration'): unknown {
  const missing: string[] = [];
  const malformed: string[] = [];

  const substituteString = (text: string, path: PropertyKey[]): string =>
    text.replace(REFERENCE, (match, body: string | undefined) => {
      if (match === '$${') return '${';
      const where = formatPath(path) || '(root)';
      const reference = body === undefined ? null : BODY.exec(body);
      if (reference === null) {
        malformed.push(
          `${where}: malformed variable reference ${JSON.stringify(match)} (use \${NAME} or \${NAME:-default}; write $\${ for a literal \${)`,
        );
        return match;
      }
      const name = reference[1]!;
      const fallback = reference[2];
      const value = env[name];
      if (value !== undefined) return value;
      if (fallback !== undefined) return fallback;
      missing.push(`${where}: environment variable ${name} is not set`);
      return match;
    });

  const walk = (node: unknown, path: PropertyKey[]): unknown => {
    if (typeof node === 'string') return substituteString(node, path);
    if (Array.isArray(node)) return node.map((item, index) => walk(item, [...path, index]));
    if (node !== null && typeof node === 'object') {
      return Object.fromEntries(
        Object.entries(node).map(([key, value]) => [key, walk(value, [...path, key])]),
      );
    }
    return node;
  };

  const result = walk(document, []);
  const problems = [...malformed, ...missing];
  if (problems.length > 0) {
    const code = malformed.length > 0 ? 'SB_CONFIG_INVALID' : 'SB_CONFIG_VARIABLE_MISSING';
    throw new SwitchboardError(code, {
      message: `${source}: ${malformed.length > 0 ? 'invalid configuration' : 'environment variables missing'}\n  ${problems.join('\n  ')}`,
      details: { source, problems },
    });
  }
  return result;
}

/**
 * The values the `${VAR}` references in `text` resolve to (a variable's value, else its default).
 * A secret is often one variable inside a longer field (`authorization: "Bearer ${API_KEY}"`):
 * the masker needs the variable's value on its own, since that is what a backend echoes.
 */
export function referencedValues(text: string, env: Env): string[] {
  const values: string[] = [];
  for (const [match, body] of text.matchAll(REFERENCE)) {
    if (match === '$${' || body === undefined) continue;
    const reference = BODY.exec(body);
    const value = reference === null ? undefined : (env[reference[1]!] ?? reference[2]);
    if (value !== undefined) values.push(value);
  }
  return values;
}
