import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { type ProbeResult, createSecretMasker, secretValues } from '@switchboard/core';
import type { EchoPipelineOptions } from './echo.js';
import type { HttpPipelineOptions } from './http.js';
import { type OpenAIPipelineOptions, OpenAIPipelineOptionsSchema } from './openai.js';
import type { ProcessPipelineOptions } from './process/process-pipeline.js';

/** The options of any pipeline type, as `pipelines[]` entries carry them. */
export type AnyPipelineOptions =
  | EchoPipelineOptions
  | HttpPipelineOptions
  | OpenAIPipelineOptions
  | ProcessPipelineOptions;

/** Options of `probePipeline`. */
export interface PipelineProbeOptions {
  /** The pipeline's place in the configuration, for hints: `pipelines[0]`. */
  configPath: string;
  /** How long a remote endpoint has to answer, in ms. */
  timeoutMs: number;
}

/** A URL as shown in a result: without credentials and query, which may hold keys. */
function shownUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
}

/** Why a request got no answer: the system error as Node words it (`connect ECONNREFUSED 127.0.0.1:9`). */
function unreachableReason(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && error.name === 'TimeoutError') return `no answer within ${timeoutMs} ms`;
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error && cause.message !== '') return cause.message;
  return error instanceof Error ? error.message : String(error);
}

/** A request to `url` that got no answer; `urlKey` is where the URL is configured (`pipelines[1].url`). */
function unreachable(url: string, error: unknown, timeoutMs: number, urlKey: string): ProbeResult {
  return {
    level: 'fail',
    detail: `unreachable: ${unreachableReason(error, timeoutMs)} (${shownUrl(url)})`,
    hint: `start the endpoint, or fix ${urlKey} and check that this host reaches it`,
  };
}

/**
 * An `http` pipeline answers at all: a `HEAD` of its URL, which runs no turn (turns are POSTs).
 * Any HTTP status counts as reachable; only no answer fails.
 */
async function probeHttp(options: HttpPipelineOptions, { configPath, timeoutMs }: PipelineProbeOptions) {
  try {
    const response = await fetch(options.url, { method: 'HEAD', signal: AbortSignal.timeout(timeoutMs) });
    return {
      level: 'ok',
      detail: `reachable: ${shownUrl(options.url)} answered HEAD with HTTP ${response.status}`,
    } as const;
  } catch (error) {
    return unreachable(options.url, error, timeoutMs, `${configPath}.url`);
  }
}

/**
 * An `openai` pipeline's endpoint takes its key: `GET {base_url}/models`, which runs no
 * completion. A refused key fails; an endpoint without `/models` (some compatible servers) or
 * without the configured model in its list is a warning, since completions may still work.
 */
async function probeOpenAI(options: OpenAIPipelineOptions, { configPath, timeoutMs }: PipelineProbeOptions) {
  const url = `${options.base_url.replace(/\/+$/, '')}/models`;
  const mask = createSecretMasker(secretValues(OpenAIPipelineOptionsSchema, options));
  let response: Response;
  try {
    response = await fetch(url, {
      headers: {
        authorization: `Bearer ${options.api_key}`,
        ...(options.organization === undefined ? {} : { 'openai-organization': options.organization }),
        ...(options.project === undefined ? {} : { 'openai-project': options.project }),
      },
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    return unreachable(url, error, timeoutMs, `${configPath}.base_url`);
  }
  const text = await response.text().catch(() => '');
  if (response.status === 401 || response.status === 403) {
    return {
      level: 'fail',
      detail: `${shownUrl(url)} rejected the API key (HTTP ${response.status})`,
      hint: `check ${configPath}.api_key (or the variable or file it reads)`,
    } as const;
  }
  if (response.status === 404) {
    return {
      level: 'warn',
      detail: `${shownUrl(url)} answered HTTP 404: the endpoint lists no models, so the key is unchecked`,
      hint: `check that ${configPath}.base_url ends where /chat/completions is appended (often /v1)`,
    } as const;
  }
  if (!response.ok) {
    return {
      level: 'fail',
      detail: `${shownUrl(url)} answered HTTP ${response.status}: ${mask(text.slice(0, 200))}`,
      hint: `check ${configPath}.base_url and the provider's status`,
    } as const;
  }
  let models: unknown[] = [];
  try {
    const data = (JSON.parse(text) as { data?: unknown }).data;
    if (Array.isArray(data)) models = data;
  } catch {
    // Not JSON: counted as a list without the model.
  }
  const listed = models.some((model) => (model as { id?: unknown } | null)?.id === options.model);
  return listed
    ? ({ level: 'ok', detail: `${shownUrl(url)} takes the key; model ${options.model} is listed` } as const)
    : ({
        level: 'warn',
        detail: `${shownUrl(url)} takes the key, but does not list model ${options.model}`,
        hint: `check ${configPath}.model against the provider's model names`,
      } as const);
}

/** Whether `path` is a file this process may execute. */
async function isExecutableFile(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/**
 * A `process` pipeline's command can be started: a path (relative to `cwd`) names an executable
 * file, or a bare name is found on the `PATH` the workers get. Starts no worker.
 */
async function probeProcess(options: ProcessPipelineOptions, { configPath }: PipelineProbeOptions) {
  const cwd = resolve(options.cwd ?? '.');
  const { command } = options;
  // spawn looks a bare name up on the PATH of the environment it is given.
  const searchPath = options.env?.PATH ?? process.env.PATH ?? '';
  const candidates = command.includes('/')
    ? [isAbsolute(command) ? command : join(cwd, command)]
    : searchPath
        .split(delimiter)
        .filter((folder) => folder !== '')
        .map((folder) => join(resolve(cwd, folder), command));
  for (const candidate of candidates) {
    if (await isExecutableFile(candidate)) return { level: 'ok', detail: `command ${candidate}` } as const;
  }
  return {
    level: 'fail',
    detail: command.includes('/')
      ? `command ${candidates[0]} is not an executable file`
      : `command ${command} is not found on PATH`,
    hint: `fix ${configPath}.command (or its cwd / env.PATH), or make the file executable`,
  } as const;
}

/**
 * The read-only check of one pipeline (`switchboard doctor`): whether a turn could reach it,
 * without running one. `echo` always can; `http` and `openai` endpoints are asked something that
 * is no turn; a `process` command is looked up, not started.
 */
export async function probePipeline(
  options: AnyPipelineOptions,
  probe: PipelineProbeOptions,
): Promise<ProbeResult> {
  switch (options.type) {
    case 'echo':
      return { level: 'ok', detail: 'built in' };
    case 'http':
      return probeHttp(options, probe);
    case 'openai':
      return probeOpenAI(options, probe);
    case 'process':
      return probeProcess(options, probe);
  }
}
