import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { loadConfig } from '@switchboard/config';
import type { CommandIo } from './io.js';

/** How long `reload` waits for the gateway's answer: a reload starts channels. */
const RELOAD_TIMEOUT_MS = 60_000;

/** The loopback address of a server bound to `host` (any address: the IPv4 loopback). */
function loopbackOf(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/**
 * `host` is this machine (an address of one of its interfaces, or any address): a request to it
 * never leaves the host. A name is not, as it may resolve elsewhere than to the gateway.
 */
function isThisMachine(host: string): boolean {
  if (host === '0.0.0.0' || host === '::' || host === '' || host === 'localhost') return true;
  if (isIP(host) === 0) return false;
  if (host.startsWith('127.') || host === '::1') return true;
  return Object.values(networkInterfaces()).some((addresses) =>
    (addresses ?? []).some((address) => address.address === host),
  );
}

/**
 * `switchboard reload`: asks the gateway running with this config file to reload it (`POST
 * /admin/reload` on its `server` address, with `admin.token`), and prints what changed. Exit 0
 * when it reloaded, 1 when it refused (the reason printed) or cannot be reached, or when
 * `server.host` is not this machine and the token would leave it.
 */
export async function reload(path: string, io: CommandIo): Promise<number> {
  const config = await loadConfig(path);
  // The token goes over plain HTTP: only to the gateway on this machine.
  if (config.admin.token !== undefined && !isThisMachine(config.server.host)) {
    io.err(
      `switchboard: server.host ${config.server.host} is not an address of this machine: the admin token is not sent over plain HTTP to another host; run \`switchboard reload\` where the gateway runs, or send it SIGHUP`,
    );
    return 1;
  }
  const url = `http://${loopbackOf(config.server.host)}:${config.server.port}/admin/reload`;
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(config.admin.token === undefined ? {} : { authorization: `Bearer ${config.admin.token}` }),
      },
      body: '{}',
      signal: AbortSignal.timeout(RELOAD_TIMEOUT_MS),
    });
  } catch (err) {
    io.err(`switchboard: no gateway answered at ${url}: ${(err as Error).message}`);
    return 1;
  }
  const body = (await response.json().catch(() => ({}))) as {
    changed?: string[];
    error?: { code: string; message: string };
  };
  if (!response.ok || body.changed === undefined) {
    io.err(
      `switchboard: ${body.error?.code ?? `HTTP ${response.status}`}: ${body.error?.message ?? 'reload failed'}`,
    );
    return 1;
  }
  io.out(
    body.changed.length === 0 ? 'reloaded: nothing changed' : `reloaded:\n  ${body.changed.join('\n  ')}`,
  );
  return 0;
}
