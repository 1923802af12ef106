// The config-reload container of the gateway's pod. Kubernetes rewrites a ConfigMap mounted as
// a folder in place (an atomic swap of the folder's `..data` link); the gateway reads its file
// only at start, on SIGHUP and on POST /admin/reload. This polls the file and, when its content
// changes, calls POST /admin/reload on the gateway over loopback, which puts the file's channels,
// pipelines, limits and routing in force (a bad file, or one that changes what needs a restart,
// is refused and the configuration in force stays).
//
// Polling, not fs.watch: the swap replaces links above the file, which inotify on the file's
// path does not report. A refused reload is logged and not retried until the file changes
// again; a gateway not answering yet (starting, restarting) is retried on the next poll.
//
// Env: SWITCHBOARD_CONFIG (the file), RELOAD_URL, SWITCHBOARD_ADMIN_TOKEN (sent when set),
// POLL_MS (default 5000).
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

const configPath = process.env.SWITCHBOARD_CONFIG ?? '/app/config/switchboard.yaml';
const reloadUrl = process.env.RELOAD_URL ?? 'http://127.0.0.1:8080/admin/reload';
const token = process.env.SWITCHBOARD_ADMIN_TOKEN ?? '';
const pollMs = Number(process.env.POLL_MS ?? 5000);

// PID 1 of its container: the kernel ignores SIGTERM for a PID 1 without a handler, and the pod
// would wait out its whole grace period.
process.on('SIGTERM', () => process.exit(0));

/** One JSON line, as the gateway logs (level numbers of pino). */
function log(level, fields, msg) {
  const levels = { info: 30, warn: 40, error: 50 };
  console.log(
    JSON.stringify({ level: levels[level], time: Date.now(), component: 'config-reload', ...fields, msg }),
  );
}

let applied = await readFile(configPath, 'utf8');
log('info', { path: configPath, pollMs }, 'watching config');
for (;;) {
  await sleep(pollMs);
  let text;
  try {
    text = await readFile(configPath, 'utf8');
  } catch (err) {
    log('warn', { err: err.message }, 'config unreadable');
    continue;
  }
  if (text === applied) continue;
  try {
    const response = await fetch(reloadUrl, {
      method: 'POST',
      headers: token === '' ? {} : { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(10_000),
    });
    const body = await response.text();
    applied = text;
    if (response.ok) log('info', { answer: body }, 'reloaded');
    else log('error', { status: response.status, answer: body }, 'reload refused');
  } catch (err) {
    log('warn', { err: err.message }, 'reload failed: retrying');
  }
}
