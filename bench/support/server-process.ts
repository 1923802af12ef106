import { type ChildProcess, spawn } from 'node:child_process';

/** A server running as a child process, as users run the gateway. */
export interface ServerProcess {
  /** Base URL read from the `listening` log line, e.g. `http://127.0.0.1:41234`. */
  url: string;
  child: ChildProcess;
  /** Sends SIGTERM and resolves once the process has exited. */
  stop(): Promise<void>;
}

/**
 * Spawns `node <args>` and resolves once it logs a JSON line `{"msg":"listening","address":…}`
 * (pino's shape, which the bare server copies). Later output is read and dropped so that the
 * pipe never fills and stalls the server; stderr is passed through for diagnostics.
 */
export function startServerProcess(
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
) {
  const child = spawn(process.execPath, args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise<ServerProcess>((resolve, reject) => {
    let buffered = '';
    let listening = false;
    child.stdout?.on('data', (chunk: Buffer) => {
      if (listening) return;
      buffered += chunk.toString();
      for (let newline = buffered.indexOf('\n'); newline >= 0; newline = buffered.indexOf('\n')) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        let entry: { msg?: unknown; address?: unknown };
        try {
          entry = JSON.parse(line) as typeof entry;
        } catch {
          continue;
        }
        if (entry.msg === 'listening' && typeof entry.address === 'string') {
          listening = true;
          resolve({
            url: entry.address,
            child,
            stop: () => {
              child.kill('SIGTERM');
              return exited;
            },
          });
          return;
        }
      }
    });
    void exited.then(() => {
      if (!listening) reject(new Error(`node ${args.join(' ')} exited before listening`));
    });
  });
}
