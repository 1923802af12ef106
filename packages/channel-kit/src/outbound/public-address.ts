import { lookup as dnsLookup } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/**
 * Addresses a url attachment must not be fetched from (docs/design.md §2 "Media out"): the URL
 * comes from a pipeline, which may have taken it from a user's text, so the gateway must not
 * become a way into its own network — loopback, private and shared ranges, link-local (cloud
 * metadata at 169.254.169.254), multicast and reserved. IPv4-mapped IPv6 addresses are checked
 * as their IPv4 address (BlockList does so).
 */
const NON_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  NON_PUBLIC.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  NON_PUBLIC.addSubnet(network, prefix, 'ipv6');

/** Whether `address` (an IP literal) is one the public internet routes to. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return !NON_PUBLIC.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | Array<{ address: string; family: number }>,
  family?: number,
) => void;

/**
 * A `lookup` for node:http that resolves as usual and fails with EADDRNOTPUBLIC when any address
 * is not public: the check is made on the addresses the socket connects to, so a name that
 * resolves to a public address when checked and a private one when connected (DNS rebinding)
 * cannot pass.
 */
export function publicLookup(
  hostname: string,
  options: { all?: boolean; family?: number | string },
  callback: LookupCallback,
): void {
  dnsLookup(hostname, { ...options, all: true } as { all: true }, (err, addresses) => {
    if (err !== null) return callback(err, []);
    const refused = addresses.find(({ address }) => !isPublicAddress(address));
    if (refused !== undefined) {
      const error: NodeJS.ErrnoException = new Error(`${hostname} resolves to a non-public address`);
      error.code = 'EADDRNOTPUBLIC';
      return callback(error, []);
    }
    if (options.all === true) return callback(null, addresses);
    const [first] = addresses;
    if (first === undefined)
      return callback(Object.assign(new Error('no address'), { code: 'ENOTFOUND' }), []);
    callback(null, first.address, first.family);
  });
}
