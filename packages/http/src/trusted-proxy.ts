import { isIP } from 'node:net';

// The named ranges of proxy-addr, which fastify's `trustProxy` compiles the list with.
const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * Whether `entry` is one `server.trust_proxy` list item fastify accepts: an IP address, a CIDR
 * range (`10.0.0.0/8`, `fd00::/8`) or a named range. Checked here so a typo stops the start with
 * its YAML path instead of an exception from inside fastify.
 */
export function isTrustedProxyEntry(entry: string): boolean {
  if (NAMED_RANGES.has(entry)) return true;
  const [address = '', prefixLength, ...rest] = entry.split('/');
  const version = isIP(address);
  if (version === 0 || rest.length > 0) return false;
  if (prefixLength === undefined) return true;
  return /^\d{1,3}$/.test(prefixLength) && Number(prefixLength) <= (version === 4 ? 32 : 128);
}
