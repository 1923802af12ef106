import { isIPv4 } from 'node:net';
import { SwitchboardError } from '@switchboard/core';
import type { FastifyRequest } from 'fastify';

/** Methods a browser may send cross-site without consequence: they change nothing. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Longest `Host` or `Origin` value quoted back in a refusal. */
const MAX_QUOTED_CHARS = 100;

/**
 * The host of a `Host` header without its port, lower-cased; IPv6 keeps its brackets. Undefined
 * when the header is malformed.
 */
function hostName(host: string): string | undefined {
  // URL would read `evil.example@127.0.0.1` as user info and a loopback host.
  if (/[/@?#\\]/.test(host)) return undefined;
  try {
    return new URL(`http://${host}`).hostname;
  } catch {
    return undefined;
  }
}

/** `[::ffff:127.x.y.z]` as URL writes it: IPv4-mapped loopback. */
const MAPPED_LOOPBACK = /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/;

/**
 * True for a `Host` header naming 127.0.0.0/8 (also IPv4-mapped), `[::1]`, `localhost` or a name
 * under `.localhost` (RFC 6761: resolved to loopback, never by DNS), with any port and an
 * optional trailing dot.
 */
export function isLoopbackHost(host: string | undefined): boolean {
  if (host === undefined) return false;
  const name = hostName(host)?.replace(/\.$/, '');
  if (name === undefined) return false;
  if (name === 'localhost' || name.endsWith('.localhost') || name === '[::1]') return true;
  if (MAPPED_LOOPBACK.test(name)) return true;
  // URL normalises IPv4 (`127.1`, `0x7f.0.0.1`) to a dotted quad.
  return isIPv4(name) && name.startsWith('127.');
}

/** Whether `origin` (an `Origin` header) is the origin the request was addressed to (its `Host`). */
function isSameOrigin(origin: string, host: string): boolean {
  try {
    const parsed = new URL(origin);
    // Both go through URL so a default port written out (`:80`) compares equal to none.
    return (
      (parsed.protocol === 'http:' || parsed.protocol === 'https:') &&
      parsed.host === new URL(`${parsed.protocol}//${host}`).host
    );
  } catch {
    // `null` (a sandboxed frame, a file: page) or garbage: no origin of this server.
    return false;
  }
}

function quoted(value: string): string {
  return JSON.stringify(value.slice(0, MAX_QUOTED_CHARS));
}

/**
 * Why a request to a server that admits loopback clients without a token may be a browser's doing
 * rather than its user's, or undefined when it is not (docs/design.md §7 "Who is trusted"). Such a
 * server trusts every process on the machine, a browser included, which a hostile page can drive:
 *
 * - DNS rebinding: the page's own name re-resolved to 127.0.0.1 lets it read the answers. Its
 *   requests still carry that name in `Host`, so a `Host` that is not a loopback name or address
 *   is refused (`SB_HTTP_HOST_NOT_LOOPBACK`).
 * - Cross-site request forgery: a form or `fetch` posting to http://127.0.0.1:PORT changes state
 *   without reading the answer. Browsers mark such requests with `Origin` and `Sec-Fetch-Site`,
 *   so a state-changing request (any method but GET, HEAD, OPTIONS) whose `Origin` is not the
 *   origin it was sent to, or whose `Sec-Fetch-Site` is `cross-site`, is refused
 *   (`SB_HTTP_CROSS_SITE`). Clients that are not browsers send neither header and pass.
 */
export function requestForgeryRefusal(request: FastifyRequest): SwitchboardError | undefined {
  const host = request.headers.host;
  if (!isLoopbackHost(host)) {
    return new SwitchboardError('SB_HTTP_HOST_NOT_LOOPBACK', {
      message: `without a token only requests addressed to a loopback name (127.0.0.1, [::1] or localhost) are served; Host was ${host === undefined ? 'missing' : quoted(host)}`,
      details: { host: host?.slice(0, MAX_QUOTED_CHARS) ?? null },
    });
  }
  if (SAFE_METHODS.has(request.method)) return undefined;
  const origin = request.headers.origin;
  if (origin !== undefined && !isSameOrigin(origin, host as string)) {
    return new SwitchboardError('SB_HTTP_CROSS_SITE', {
      message: `a ${request.method} from another origin (${quoted(origin)}) is refused: a page the browser showed may not change state here`,
      details: { origin: origin.slice(0, MAX_QUOTED_CHARS) },
    });
  }
  if (request.headers['sec-fetch-site'] === 'cross-site') {
    return new SwitchboardError('SB_HTTP_CROSS_SITE', {
      message: `a ${request.method} the browser marked Sec-Fetch-Site: cross-site is refused: a page the browser showed may not change state here`,
      details: { sec_fetch_site: 'cross-site' },
    });
  }
  return undefined;
}
