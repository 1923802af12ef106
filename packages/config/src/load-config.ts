import { adminTokenProblems } from './admin-tokens.js';
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, sep } from 'node:path';
import {
  createRouter,
  HANDOFF,
  isSwitchboardError,
  RoutingSchema,
  type RoutingConfigInput,
  SwitchboardError,
  secretEntries,
  secretValues,
} from '@switchboard/core';
import { LineCounter, parseDocument, visit } from 'yaml';
import { configErrorMap, type EnvValues, hideEnvValues, problemLines } from './problem-lines.js';
import { type Config, ConfigSchema, TenantSchema } from './schema.js';
import { createReferences, type Env, type References } from './substitute.js';
import { DEFAULT_TENANT } from './tenants.js';

/**
 * A parsed configuration with every secret value configured in it: the values of the fields
 * marked with `secretField` (channel tokens, signing secrets, API keys, the admin token, pipeline
 * secrets and headers, the Redis and PostgreSQL URLs) and every value read from a file, for the masker of log lines and audit records; and the files its
 * `${file:…}` and `NAME_FILE` references were read from, and its `tenants_dir` files (which hold
 * tenants' credentials as the main file does), which workers must not read either.
 */
export type LoadedConfig = Config & { secrets: readonly string[]; secretFiles: readonly string[] };

/**
 * What `loadConfig` gives: the parsed configuration and every path it read — the file, its
 * `tenants_dir` (whose listing says which tenant files there are) and the files it named — so a
 * caller can tell by their stats alone whether loading again could give something else.
 */
export type LoadedFile = LoadedConfig & { readFrom: readonly string[] };

export interface ParseConfigOptions {
  /** Where `${VAR}` values (and `VAR_FILE` paths) come from. Default: `process.env`. */
  env?: Env;
  /** Names the text in error messages, usually its file path. Default: `configuration`. */
  source?: string;
  /**
   * The files of `tenants_dir`, one tenant each, appended to `tenants` in this order; problems
   * in one are named by its `source`. `loadConfig` reads them. Default: none.
   */
  tenantFiles?: readonly TenantFile[];
}

/** One file of `tenants_dir`: its path and its text. */
export interface TenantFile {
  source: string;
  text: string;
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
 * The ids of the `pipelines` of the document (`top`, defaults applied) or of a tenant, read
 * defensively from the raw document.
 */
function pipelineIdsOf(part: unknown, top = false): string[] {
  const schema = top ? ConfigSchema.in.shape.pipelines : TenantSchema.shape.pipelines;
  const parsed = schema.safeParse(section(part, 'pipelines'));
  return parsed.success
    ? parsed.data.map((pipeline) => pipeline.id)
    : [section(part, 'pipelines')]
        .flat()
        .map((pipeline) => section(pipeline, 'id'))
        .filter((id): id is string => typeof id === 'string');
}

/** The router's problems with `routing` against `pipelines`, as `routing.<path>: problem` lines. */
function routerProblems(routing: unknown, pipelines: string[], top = false): string[] {
  const parsed = (top ? ConfigSchema.in.shape.routing : RoutingSchema).safeParse(routing);
  try {
    createRouter(parsed.success ? parsed.data : (routing as RoutingConfigInput), { pipelines });
    return [];
  } catch (error) {
    if (!isSwitchboardError(error, 'SB_ROUTING_INVALID')) throw error;
    return (error.details?.problems as string[] | undefined) ?? [error.message];
  }
}

/**
 * Routing problems that need the rest of the file: unknown pipeline targets (and the rule
 * problems themselves, worded by the router as `switchboard route` and reloads word them), for
 * the top-level routing and each tenant's, which may name only its own pipelines and not
 * `__handoff__` (the operator desk is not divided by tenant). Read from the raw document so they
 * are reported together with every other problem.
 */
function routingProblems(document: unknown): string[] | null {
  const problems = routerProblems(section(document, 'routing'), pipelineIdsOf(document, true), true);
  const tenants = section(document, 'tenants');
  if (Array.isArray(tenants)) {
    const owner = new Map<string, string>();
    for (const id of pipelineIdsOf(document, true)) owner.set(id, DEFAULT_TENANT);
    for (const tenant of tenants) {
      const tenantId = section(tenant, 'id');
      for (const id of pipelineIdsOf(tenant)) if (typeof tenantId === 'string') owner.set(id, tenantId);
    }
    tenants.forEach((tenant: unknown, index) => {
      const at = `tenants[${index}].`;
      const tenantId = section(tenant, 'id');
      const routing = section(tenant, 'routing');
      // A missing routing is the schema's to report.
      if (routing === undefined) return;
      for (const line of routerProblems(routing, pipelineIdsOf(tenant))) {
        const named = /unknown pipeline ("(?:[^"\\]|\\.)*")/.exec(line)?.[1];
        const other = named === undefined ? undefined : owner.get(JSON.parse(named) as string);
        problems.push(
          other === undefined || other === tenantId
            ? `${at}${line}`
            : `${at}${line}; it is tenant ${JSON.stringify(other)}'s, and a tenant's routing names only its own pipelines`,
        );
      }
      const targets = [section(routing, 'default')];
      const rules = section(routing, 'rules');
      if (Array.isArray(rules)) targets.push(...rules.map((rule) => section(rule, 'pipeline')));
      targets.forEach((target, position) => {
        if (target !== HANDOFF) return;
        const path = position === 0 ? 'routing.default' : `routing.rules[${position - 1}].pipeline`;
        problems.push(`${at}${path}: a tenant's routing cannot hand off to an operator (${HANDOFF})`);
      });
    });
  }
  return problems.length === 0 ? null : problems;
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
  const tenantFiles = options.tenantFiles ?? [];
  const own = parseYaml(text, source);
  const listed = section(own, 'tenants');
  const written = withTenants(
    own,
    tenantFiles.map((file) => parseYaml(file.text, file.source)),
  );
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
  const tokens = adminTokenProblems(document);
  if (parsed.success && routing === null && tokens.length === 0)
    return {
      ...parsed.data,
      secrets: configuredSecrets(written, document, references),
      secretFiles: [...references.files(), ...tenantFiles.map((file) => file.source)],
    };

  // The router words routing's own problems; the schema's lines for that section would repeat them.
  const issues = parsed.success ? [] : parsed.error.issues;
  const worded = (path: readonly PropertyKey[]) =>
    path[0] === 'routing' ||
    (path[0] === 'tenants' &&
      path[2] === 'routing' &&
      section([section(document, 'tenants')].flat()[path[1] as number], 'routing') !== undefined);
  // Read from the document as written: the fields are named as in the YAML, and may be malformed.
  const secretPaths = secretEntries(ConfigSchema, document).map((entry) => entry.path);
  const isSecret = (path: readonly PropertyKey[]) => secretPaths.some((secret) => startsWith(path, secret));
  const problems = [
    ...problemLines(
      routing === null ? issues : issues.filter((issue) => !worded(issue.path)),
      isSecret,
      envValues,
    ),
    ...(routing ?? []).map((line) => hideEnvValues(line, envValues)),
    ...tokens,
  ];
  const listedCount = Array.isArray(listed) ? listed.length : 0;
  // No `cause`: the ZodError's message quotes every input it rejected, secrets included, and a
  // logged error carries its cause's message. The problem lines say all it would.
  throw invalid(
    source,
    problems.map((line) => namingTenantFiles(line, listedCount, tenantFiles)),
  );
}

/**
 * The document with the tenants of `tenants_dir` after those it lists. A `tenants` that is not a
 * list is left for the schema to refuse.
 */
function withTenants(document: unknown, files: unknown[]): unknown {
  if (files.length === 0 || document === null || typeof document !== 'object') return document;
  const listed = section(document, 'tenants') ?? [];
  return Array.isArray(listed) ? { ...document, tenants: [...listed, ...files] } : document;
}

/** `line` with `tenants[k].` of a tenant read from a file replaced by that file's name. */
function namingTenantFiles(line: string, listedCount: number, files: readonly TenantFile[]): string {
  return line.replace(/tenants\[(\d+)\]\.?/g, (whole, index: string, offset: number) => {
    const file = files[Number(index) - listedCount];
    if (file === undefined) return whole;
    return offset === 0 ? `${file.source}: ` : `${file.source}:`;
  });
}

/**
 * Reads and parses a configuration file (see `parseConfig`). A missing file throws
 * `SB_CONFIG_NOT_FOUND` naming the path.
 */
export async function loadConfig(
  path: string,
  options: Omit<ParseConfigOptions, 'source'> = {},
): Promise<LoadedFile> {
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
  const directory = tenantsDirOf(text, options.env ?? process.env);
  const tenantFiles = directory === undefined ? [] : await readTenantFiles(path, directory);
  const config = parseConfig(text, { ...options, source: path, tenantFiles });
  return {
    ...config,
    readFrom: [path, ...(directory === undefined ? [] : [directory]), ...config.secretFiles],
  };
}

/**
 * `tenants_dir` of the text, substituted; undefined when absent or when the text cannot say
 * (`parseConfig` then reports why).
 */
function tenantsDirOf(text: string, env: Env): string | undefined {
  try {
    const written = section(parseDocument(text).toJS({ maxAliasCount: MAX_ALIAS_COUNT }), 'tenants_dir');
    if (typeof written !== 'string') return undefined;
    const directory = createReferences(env).substitute(written, 'tenants_dir');
    return typeof directory === 'string' && directory !== '' ? directory : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The `*.yaml` and `*.yml` files of `directory`, by name, leaving out hidden ones (an editor's
 * lock file, a mounted volume's `..data`). Each must be a file inside the folder: a symlink is
 * followed only within it (as a Kubernetes ConfigMap mounts them), so that no tenant file can
 * pull in, and echo in an error, a file from elsewhere.
 */
async function readTenantFiles(source: string, directory: string): Promise<TenantFile[]> {
  let names: string[];
  let folder: string;
  try {
    names = (await readdir(directory))
      .filter((name) => /\.ya?ml$/.test(name) && !name.startsWith('.'))
      .sort();
    folder = await realpath(directory);
  } catch (error) {
    throw invalid(source, [`tenants_dir: cannot read the directory: ${(error as Error).message}`], error);
  }
  return Promise.all(
    names.map(async (name) => {
      const file = join(directory, name);
      try {
        const target = await realpath(file);
        const inside = relative(folder, target);
        if (inside.split(sep)[0] === '..' || isAbsolute(inside) || !(await stat(target)).isFile())
          throw new Error('not a file inside tenants_dir');
        return { source: file, text: await readFile(target, 'utf8') };
      } catch (error) {
        throw invalid(source, [`tenants_dir: cannot read ${file}: ${(error as Error).message}`], error);
      }
    }),
  );
}
