import { createSecretMasker, isSwitchboardError } from '@switchboard/core';
import { probePipeline } from '@switchboard/pipelines';
import { probeChannel } from '../probe-channel.js';
import { type NamedCheck, probeStores } from '../probe-stores.js';
import { validateConfig } from './config-check.js';
import type { CommandIo } from './io.js';

/** How long each remote check may take, in ms: a doctor answers in seconds, not in platform timeouts. */
const PROBE_TIMEOUT_MS = 3000;

/**
 * The most Redis' clock may differ from this host's, in ms. The pool times leases by Redis'
 * clock, corrected per host; a host off by more than this is misconfigured (no NTP), and its
 * logs and metrics no longer line up with the other replicas'.
 */
const MAX_CLOCK_SKEW_MS = 2000;

const MARKS = { ok: '✓', warn: '!', fail: '✗' } as const;

/** A check that threw (a bug of the check, not a finding), reported as failed rather than ending the run. */
function brokenCheck(name: string, error: unknown): NamedCheck {
  return {
    name,
    level: 'fail',
    detail: `the check failed: ${error instanceof Error ? error.message : String(error)}`,
  };
}

/** `check` under `name`, or a broken check when it threw. */
async function settled(name: string, check: Promise<Omit<NamedCheck, 'name'>>): Promise<NamedCheck> {
  return check.then(
    (result) => ({ name, ...result }),
    (error: unknown) => brokenCheck(name, error),
  );
}

/**
 * Every check, at once: the config first, loaded and validated as `config check` does (a refusal
 * is then the only check), then each channel, pipeline and store it configures.
 */
async function runChecks(path: string): Promise<NamedCheck[]> {
  let config: Awaited<ReturnType<typeof validateConfig>>;
  try {
    config = await validateConfig(path);
  } catch (error) {
    if (!isSwitchboardError(error)) throw error;
    return [
      {
        name: 'config',
        level: 'fail',
        detail: `${error.code}: ${error.message}`,
        hint:
          error.code === 'SB_CONFIG_NOT_FOUND'
            ? 'name the file with -c FILE or $SWITCHBOARD_CONFIG'
            : `fix ${path} (nothing else is checked until it loads)`,
      },
    ];
  }
  const checks = await Promise.all([
    ...config.channels.map((channel, index) =>
      settled(
        `channels.${channel.id}`,
        probeChannel(channel, { configPath: `channels[${index}]`, timeoutMs: PROBE_TIMEOUT_MS }),
      ),
    ),
    ...config.pipelines.map((pipeline, index) =>
      settled(
        `pipelines.${pipeline.id}`,
        probePipeline(pipeline.options, { configPath: `pipelines[${index}]`, timeoutMs: PROBE_TIMEOUT_MS }),
      ),
    ),
    probeStores(config, { timeoutMs: PROBE_TIMEOUT_MS, maxClockSkewMs: MAX_CLOCK_SKEW_MS }).catch(
      (error: unknown) => [brokenCheck('store', error)],
    ),
  ]);
  const summary = `${config.channels.length} channel(s), ${config.pipelines.length} pipeline(s), store ${config.store.kind}`;
  // Each probe hides the secrets it sends; this is the net under them (a platform or database
  // error that quotes one).
  const mask = createSecretMasker(config.secrets);
  const all: NamedCheck[] = [
    { name: 'config', level: 'ok', detail: `${path}: ${summary}` },
    ...checks.flat(),
  ];
  return all.map((check) => ({
    ...check,
    detail: mask(check.detail),
    ...(check.hint === undefined ? {} : { hint: mask(check.hint) }),
  }));
}

/**
 * `switchboard doctor`: checks the configuration, then each configured part for real and at once
 * (a channel's credentials with its platform's read-only identity call, each pipeline's endpoint
 * without running a turn, the stores' settings), one line per check with a hint for each problem,
 * or with `json` an array of `{ name, ok, level, detail, hint }`. Exit 1 when any check failed;
 * warnings do not fail. Sends no message and runs no turn.
 */
export async function doctor(path: string, flags: { json: boolean }, io: CommandIo): Promise<number> {
  const checks = await runChecks(path);
  const failed = checks.filter((check) => check.level === 'fail').length;
  if (flags.json) {
    io.out(
      JSON.stringify(
        checks.map(({ name, level, detail, hint }) => ({
          name,
          ok: level !== 'fail',
          level,
          detail,
          hint: hint ?? null,
        })),
        null,
        2,
      ),
    );
  } else {
    const width = Math.max(...checks.map((check) => check.name.length));
    for (const { name, level, detail, hint } of checks) {
      io.out(
        `${MARKS[level]} ${name.padEnd(width)}  ${detail}${hint === undefined ? '' : ` — hint: ${hint}`}`,
      );
    }
    const warned = checks.filter((check) => check.level === 'warn').length;
    io.out(`\n${checks.length} check(s): ${failed} failed, ${warned} warning(s)`);
  }
  return failed > 0 ? 1 : 0;
}
