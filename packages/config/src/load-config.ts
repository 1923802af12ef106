import { readFile } from 'node:fs/promises';
import {
  createRouter,
  isSwitchboardError,
  type RoutingConfigInput,
  SwitchboardError,
  secretEntries,
  secretValues,
} from '@switchboard/core';
import { LineCounter, parseDocument, visit } from 'yaml';
import { configErrorMap, type EnvValues, hideEnvValues, problemLines } from './problem-lines.js';
import { type Config, ConfigSchema } from './schema.js';
import { createReferences, type Env, type References } from './substitute.js';

/**
 * A parsed configuration with every secret value configured in it: the values of the fields
 * marked with `secretField` (channel tokens, signing secrets, API keys, the admin token, pipeline
 * secrets and headers, the Redis and PostgreSQL URLs) and every value read from a file, for the masker of log lines and audit records; and the files its
 * `${file:…}` and `NAME_FILE` references were read from, which workers must not read either.
 */
export type LoadedConfig = Config & { secrets: readonly string[]; secretFiles: readonly string[] };

export interface ParseConfigOptions {
  /** Where `${VAR}` values (and `VAR_FILE` paths) come from. Default: `process.env`. */
  env?: Env;
  /** Names the text in error messages, usually its file path. Default: `configuration`. */
  source?: string;
}

function invalid(source: string, problems: string[], cause?: unknown): SwitchboardError {
  return new SwitchboardError('SB_CONFIG_INVALID', {
    message: `${source}: invalid configuration\n  ${problems.join('\n  ')}`,
    details: { source, problems },
    cause,
  });
}

/**
 * The most nodes one alias may expand to (yaml's `maxAliasCount`): a configuration has no use for
 * deep aliasing, and nine levels of nine aliases each would build hundreds of millions of nodes.
 */
const MAX_ALIAS_COUNT = 100;

/**
 * YAML → plain data; every syntax error and unresolved alias as `file:line:col: problem`, aliases
 * that expand past `MAX_ALIAS_COUNT` as one line. An empty text is `{}`.
 */
function parseYaml(text: string, source: string): unknown {
  const lineCounter = new LineCounter();
  const at = (offset: number) => {
    const { line, col } = lineCounter.linePos(offset);
    return `${source}:${line}:${col}`;
  };
  const document = parseDocument(text, { lineCounter, prettyErrors: false });
  if (document.errors.length > 0) {
    const problems = document.errors.map((error) => `${at(error.pos[0])}: ${error.message}`);
    throw invalid(source, problems, document.errors[0]);
  }
  // yaml reports these only from toJS, as a ReferenceError without a position.
  const unresolved: string[] = [];
  visit(document, {
    Alias(_key, alias) {
      if (alias.resolve(document) === undefined)
        unresolved.push(
          `${at(alias.range?.[0] ?? 0)}: unresolved alias *${alias.source} (no &${alias.source} before it)`,
        );
    },
  });
  if (unresolved.length > 0) throw invalid(source, unresolved);
  try {
    return document.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) ?? {};
  } catch (error) {
    // With every alias resolved, toJS throws only when the expansion passes the bound.
    if (!(error instanceof ReferenceError)) throw error;
    throw invalid(source, [`${source}: aliases expand to more than ${MAX_ALIAS_COUNT} nodes each`], error);
  }
}

function section(document: unknown, key: string): unknown {
  return document !== null && typeof document === 'object'
    ? (document as Record<string, unknown>)[key]
    : undefined;
}

/**
 * Routing problems that need the rest of the file: unknown pipeline targets (and the rule
 * problems themselves, worded by the router as `switchboard route` and reloads word them). Read
 * from the raw document so they are reported together with every other problem.
 */
function routingProblems(document: unknown): string[] | null {
  const pipelines = ConfigSchema.shape.pipelines.safeParse(section(document, 'pipelines'));
  const pipelineIds = pipelines.success
    ? pipelines.data.map((pipeline) => pipeline.id)
    : [section(document, 'pipelines')]
        .flat()
        .map((pipeline) => section(pipeline, 'id'))
        .filter((id): id is string => typeof id === 'string');
  const routing = ConfigSchema.shape.routing.safeParse(section(document, 'routing'));
  try {
    createRouter(routing.success ? routing.data : (section(document, 'routing') as RoutingConfigInput), {
      pipelines: pipelineIds,
    });
    return null;
  } catch (error) {
    if (!isSwitchboardError(error, 'SB_ROUTING_INVALID')) throw error;
    return (error.details?.problems as string[] | undefined) ?? [error.message];
  }
}

/**
 * Every secret value to mask: each secret field's whole value, the value of each variable
 * referenced inside one (`"Bearer ${API_KEY}"` → the key alone, as a backend would echo it), and
 * every value read from a file, whatever field it went to (a file is where secrets are kept).
 */
function configuredSecrets(written: unknown, document: unknown, references: References): string[] {
  const referenced = secretValues(ConfigSchema, written).flatMap((text) => references.valuesIn(text));
  const values = [...secretValues(ConfigSchema, document), ...referenced, ...references.fileValues()];
  return [...new Set(values)].filter((value) => value !== '');
}

/**
 * What came from the environment or a file: each string that holds a reference, as substituted,
 * and each reference's value alone. `document` is `written` substituted (same shape).
 */
function envValuesOf(written: unknown, document: unknown, references: References): EnvValues {
  const values = new Set<string>();
  const walk = (text: unknown, substituted: unknown): void => {
    if (typeof text === 'string') {
      const referenced = references.valuesIn(text);
      if (referenced.length > 0 && typeof substituted === 'string') values.add(substituted);
      for (const value of referenced) values.add(value);
    } else if (text !== null && typeof text === 'object') {
      for (const [key, child] of Object.entries(text)) {
        walk(child, (substituted as Record<string, unknown> | undefined)?.[key]);
      }
    }
  };
  walk(written, document);
  values.delete('');
  return values;
}

function startsWith(path: readonly PropertyKey[], prefix: readonly PropertyKey[]): boolean {
  return prefix.length <= path.length && prefix.every((part, index) => path[index] === part);
}

/**
 * Parses the text of a switchboard.yaml: YAML, then `${VAR}` substitution, then the schema, then
 * the routing rules against the pipelines. Throws a SwitchboardError listing every problem at
 * once (also in `details.problems`): `SB_CONFIG_INVALID` (syntax, schema, routing),
 * `SB_CONFIG_SECRET_FILE_UNREADABLE` or `SB_CONFIG_VARIABLE_MISSING`. No problem line shows the
 * value of a secret field, nor a value that came from a `${VAR}` or a file.
 */
export function parseConfig(text: string, options: ParseConfigOptions = {}): LoadedConfig {
  const source = options.source ?? 'configuration';
  const env = options.env ?? process.env;
  const written = parseYaml(text, source);
  const references = createReferences(env);
  const document = references.substitute(written, source);

  const envValues = envValuesOf(written, document, references);
  // Interpreted: zod's compiled fast path pays off on schemas parsed per request, not once a start.
  const parsed = ConfigSchema.safeParse(document, {
    error: configErrorMap(envValues),
    reportInput: true,
    jitless: true,
  });
  const routing = routingProblems(document);
  if (parsed.success && routing === null)
    return {
      ...parsed.data,
      secrets: configuredSecrets(written, document, references),
      secretFiles: references.files(),
    };

  // The router words routing's own problems; the schema's lines for that section would repeat them.
  const issues = parsed.success ? [] : parsed.error.issues;
  // Read from the document as written: the fields are named as in the YAML, and may be malformed.
  const secretPaths = secretEntries(ConfigSchema, document).map((entry) => entry.path);
  const isSecret = (path: readonly PropertyKey[]) => secretPaths.some((secret) => startsWith(path, secret));
  const problems = [
    ...problemLines(
      routing === null ? issues : issues.filter((issue) => issue.path[0] !== 'routing'),
      isSecret,
      envValues,
    ),
    ...(routing ?? []).map((line) => hideEnvValues(line, envValues)),
  ];
  // No `cause`: the ZodError's message quotes every input it rejected, secrets included, and a
  // logged error carries its cause's message. The problem lines say all it would.
  throw invalid(source, problems);
}

/**
 * Reads and parses a configuration file (see `parseConfig`). A missing file throws
 * `SB_CONFIG_NOT_FOUND` naming the path.
 */
export async function loadConfig(
  path: string,
  options: Omit<ParseConfigOptions, 'source'> = {},
): Promise<LoadedConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new SwitchboardError('SB_CONFIG_NOT_FOUND', {
        message: `configuration file not found: ${path}`,
        details: { path },
        cause: error,
      });
    }
    throw invalid(path, [`cannot read the file: ${(error as Error).message}`], error);
  }
  return parseConfig(text, { ...options, source: path });
}
