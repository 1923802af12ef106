import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { formatPath, SwitchboardError } from '@switchboard/core';

/** The environment variables `${VAR}` references read from. */
export type Env = Readonly<Record<string, string | undefined>>;

// `$${` (escape), `${…}` (reference), or a `${` never closed.
const REFERENCE = /\$\$\{|\$\{([^}]*)\}|\$\{/g;
const VARIABLE = /^([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?$/s;
const FILE = /^file:(.+)$/s;

/** A secret file holds one value: a bigger one is a wrong path (a log, a device), not a key. */
const MAX_SECRET_FILE_BYTES = 64 * 1024;

type Resolution =
  | { value: string; file?: string }
  | { problem: string; kind: 'malformed' | 'unreadable' | 'missing' };

/** `ENOENT: no such file or directory`, without the system call and path Node appends. */
function systemReason(error: unknown): string {
  return (error as Error).message.replace(/, \w+( '.*')?$/s, '');
}

/**
 * The text of a secret file without its trailing newlines (`echo token > file` writes one), or
 * why it cannot be read. The reason names the path and the system's error, never any content.
 */
function readSecretFile(path: string): { value: string } | { reason: string } {
  let fd: number;
  try {
    // Non-blocking: opening a FIFO no one writes to would otherwise wait forever.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    return { reason: systemReason(error) };
  }
  try {
    if (!fstatSync(fd).isFile()) return { reason: 'not a regular file' };
    const buffer = Buffer.alloc(MAX_SECRET_FILE_BYTES + 1);
    let length = 0;
    // Read to the end rather than trust the size: files under /proc report 0.
    for (;;) {
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) break;
      length += read;
      if (length > MAX_SECRET_FILE_BYTES)
        return { reason: `larger than ${MAX_SECRET_FILE_BYTES} bytes (a secret file holds one value)` };
    }
    return { value: buffer.toString('utf8', 0, length).replace(/[\r\n]+$/, '') };
  } catch (error) {
    return { reason: systemReason(error) };
  } finally {
    closeSync(fd);
  }
}

/**
 * The references of one configuration load, each resolved once by its text (a file is read once
 * however often one reference names it and whatever asks; `${file:P}` and a `NAME_FILE` of P are
 * two references, each reading P):
 * - `${NAME}`, `${NAME:-default}`: the variable; when it is unset and `NAME_FILE` is set, the
 *   text of the file `NAME_FILE` names (the convention of Docker secrets), before the default.
 *   Both set is an error: which one is meant cannot be told.
 * - `${file:PATH}`: the text of the file at PATH (relative to the working directory).
 * A file's trailing newlines are dropped. Reading secrets from files keeps them out of the
 * gateway's environment, which its child processes and `/proc/<pid>/environ` expose.
 */
export interface References {
  /**
   * Replaces every reference in every string scalar of a parsed YAML document; `$${` stands for a
   * literal `${`. It runs on the parsed tree rather than the raw text so that a value is always
   * one string and can never inject YAML structure; numbers are coerced later by the schema where
   * a number is expected (`port: ${PORT:-8080}`). Mapping keys are left alone.
   *
   * Every problem is collected before throwing, one `channels[1].token: …` line each: a malformed
   * reference (`${}`, `${A B}`, an unclosed `${`) or both `NAME` and `NAME_FILE` set →
   * `SB_CONFIG_INVALID`; else a file that cannot be read → `SB_CONFIG_SECRET_FILE_UNREADABLE`;
   * else unset variables without a default → `SB_CONFIG_VARIABLE_MISSING`.
   */
  substitute(document: unknown, source: string): unknown;
  /**
   * The values the references in `text` resolve to. A secret is often one reference inside a
   * longer field (`authorization: "Bearer ${API_KEY}"`): the masker needs the value on its own,
   * since that is what a backend echoes.
   */
  valuesIn(text: string): string[];
  /** The files read so far, each once, as the references wrote their paths. */
  files(): string[];
  /** The values read from files so far: each is a secret, whatever field it went to. */
  fileValues(): string[];
}

export function createReferences(env: Env): References {
  const resolved = new Map<string | undefined, Resolution>();

  const fromFile = (path: string, what: string): Resolution => {
    const read = readSecretFile(path);
    return 'value' in read
      ? { value: read.value, file: path }
      : { kind: 'unreadable', problem: `cannot read ${what} ${path}: ${read.reason}` };
  };

  const resolveBody = (body: string | undefined): Resolution => {
    const file = body === undefined ? null : FILE.exec(body);
    if (file !== null) return fromFile(file[1]!, 'the file');
    const variable = body === undefined ? null : VARIABLE.exec(body);
    if (variable === null)
      return {
        kind: 'malformed',
        problem: `malformed variable reference ${JSON.stringify(body === undefined ? '${' : `\${${body}}`)} (use \${NAME}, \${NAME:-default} or \${file:PATH}; write $\${ for a literal \${)`,
      };
    const name = variable[1]!;
    const value = env[name];
    const filePath = env[`${name}_FILE`];
    if (value !== undefined && filePath !== undefined)
      return {
        kind: 'malformed',
        problem: `environment variables ${name} and ${name}_FILE are both set: set one`,
      };
    if (value !== undefined) return { value };
    if (filePath !== undefined) return fromFile(filePath, `the file of ${name}_FILE,`);
    const fallback = variable[2];
    if (fallback !== undefined) return { value: fallback };
    return { kind: 'missing', problem: `environment variable ${name} is not set` };
  };

  const resolve = (body: string | undefined): Resolution => {
    let resolution = resolved.get(body);
    if (resolution === undefined) {
      resolution = resolveBody(body);
      resolved.set(body, resolution);
    }
    return resolution;
  };

  return {
    substitute(document, source) {
      const problems = { malformed: [] as string[], unreadable: [] as string[], missing: [] as string[] };
      const substituteString = (text: string, path: PropertyKey[]): string =>
        text.replace(REFERENCE, (match, body: string | undefined) => {
          if (match === '$${') return '${';
          const resolution = resolve(body);
          if ('value' in resolution) return resolution.value;
          problems[resolution.kind].push(`${formatPath(path) || '(root)'}: ${resolution.problem}`);
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
      const { malformed, unreadable, missing } = problems;
      const all = [...malformed, ...unreadable, ...missing];
      if (all.length === 0) return result;
      const [code, summary] =
        malformed.length > 0
          ? (['SB_CONFIG_INVALID', 'invalid configuration'] as const)
          : unreadable.length > 0
            ? (['SB_CONFIG_SECRET_FILE_UNREADABLE', 'secret files unreadable'] as const)
            : (['SB_CONFIG_VARIABLE_MISSING', 'environment variables missing'] as const);
      throw new SwitchboardError(code, {
        message: `${source}: ${summary}\n  ${all.join('\n  ')}`,
        details: { source, problems: all },
      });
    },
    valuesIn(text) {
      const values: string[] = [];
      for (const [match, body] of text.matchAll(REFERENCE)) {
        if (match === '$${' || body === undefined) continue;
        const resolution = resolve(body);
        if ('value' in resolution) values.push(resolution.value);
      }
      return values;
    },
    files() {
      const files = [...resolved.values()].flatMap((resolution) =>
        'file' in resolution && resolution.file !== undefined ? [resolution.file] : [],
      );
      return [...new Set(files)];
    },
    fileValues() {
      return [...resolved.values()].flatMap((resolution) =>
        'file' in resolution && resolution.file !== undefined ? [resolution.value] : [],
      );
    },
  };
}

/** `createReferences(env).substitute(document, source)`: one document's references replaced. */
export function substituteEnv(document: unknown, env: Env, source = 'configuration'): unknown {
  return createReferences(env).substitute(document, source);
}
