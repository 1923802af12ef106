import { parseArgs } from 'node:util';
import { isSwitchboardError } from '@switchboard/core';
import { AuditFiltersSchema } from './admin/audit-filters.js';
import { type CommandIo, processIo } from './commands/io.js';
import { resolveConfigPath } from './config-path.js';
import type { ReloadSignal } from './reload-signal.js';

const USAGE = `Usage: switchboard <command> [options]

Commands:
  serve                      run the gateway
  config check               validate the configuration and exit
  reload                     make the running gateway reload this configuration file
  doctor [--json]            check the configuration, then each channel, pipeline and store for real
                             (read-only: sends no message, runs no turn); exit 1 on any failure
  route                      dry-run routing for one message
      --channel ID --chat-type person|group --chat-id ID [--sender ID] --text TEXT [--mention]
      [--event edited|deleted|reaction] [--json]
      (write ids that start with "-" as --chat-id=-100123)
  audit                      list audited outcomes, newest first (reads the SQLite file)
      [--outcome O] [--reason R] [--rule R] [--channel ID] [--tenant ID] [--session S]
      [--since 1h|ISO] [--until ISO] [--limit N] [--cursor C] [--json]

Options:
  -c, --config FILE          configuration file (default: $SWITCHBOARD_CONFIG or config/switchboard.yaml)
  -h, --help                 show this help`;

const OPTIONS = {
  config: { type: 'string', short: 'c' },
  help: { type: 'boolean', short: 'h' },
  json: { type: 'boolean' },
  channel: { type: 'string' },
  'chat-type': { type: 'string' },
  'chat-id': { type: 'string' },
  sender: { type: 'string' },
  text: { type: 'string' },
  mention: { type: 'boolean' },
  event: { type: 'string' },
  outcome: { type: 'string' },
  reason: { type: 'string' },
  rule: { type: 'string' },
  session: { type: 'string' },
  tenant: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
} as const;

function usageError(io: CommandIo, problem: string): number {
  io.err(`switchboard: ${problem}\n\n${USAGE}`);
  return 2;
}

/**
 * Runs one CLI invocation; returns the exit code. `reloadSignal`: SIGHUP as held since the process
 * began (the CLI installs it first); `serve` handles it, the other commands release it.
 */
export async function main(
  argv: string[],
  io: CommandIo = processIo,
  reloadSignal?: ReloadSignal,
): Promise<number> {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true });
  } catch (error) {
    return usageError(io, (error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help || positionals.length === 0) {
    io.out(USAGE);
    return values.help ? 0 : 2;
  }
  const path = resolveConfigPath(values.config);
  const verb = positionals.join(' ');
  if (verb !== 'serve') reloadSignal?.release();
  // Each command is loaded when it runs: only `serve` needs the HTTP server, the stores and the
  // platform libraries, and `--help` or `route` must answer without loading them.
  try {
    switch (verb) {
      case 'serve': {
        const { serve } = await import('./commands/serve.js');
        return await serve(path, reloadSignal);
      }
      case 'reload': {
        const { reload } = await import('./commands/reload.js');
        return await reload(path, io);
      }
      case 'config check': {
        const { configCheck } = await import('./commands/config-check.js');
        return await configCheck(path, io);
      }
      case 'doctor': {
        const { doctor } = await import('./commands/doctor.js');
        return await doctor(path, { json: values.json ?? false }, io);
      }
      case 'route': {
        const missing = (['channel', 'chat-type', 'chat-id', 'text'] as const).filter(
          (flag) => values[flag] === undefined,
        );
        if (missing.length > 0)
          return usageError(io, `route needs ${missing.map((flag) => `--${flag}`).join(', ')}`);
        const { route } = await import('./commands/route.js');
        return await route(
          path,
          {
            channel: values.channel as string,
            chatType: values['chat-type'] as string,
            chatId: values['chat-id'] as string,
            sender: values.sender,
            text: values.text as string,
            mention: values.mention ?? false,
            ...(values.event === undefined ? {} : { event: values.event }),
            json: values.json ?? false,
          },
          io,
        );
      }
      case 'audit': {
        const filters = AuditFiltersSchema.keyof().options.map((filter) => [filter, values[filter]]);
        const { audit } = await import('./commands/audit.js');
        return await audit(path, { ...Object.fromEntries(filters), json: values.json ?? false }, io);
      }
      default:
        return usageError(io, `unknown command "${verb}"`);
    }
  } catch (error) {
    if (isSwitchboardError(error)) {
      io.err(`switchboard: ${error.code}: ${error.message}`);
      return 1;
    }
    throw error;
  }
}
