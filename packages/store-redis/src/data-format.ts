import { SwitchboardError } from '@switchboard/core';
import type { RedisClient } from './redis-connection.js';

/**
 * The data format this build writes under a deployment's prefix, and the only one it reads. A
 * change to what the scripts store (a key's type, a hash's fields, a value's encoding) takes the
 * next number, with the code that reads or converts what the number before left.
 */
export const DATA_FORMAT_VERSION = 1;

/** `{<prefix>}:format`: the data format of everything stored under the prefix. */
export function dataFormatKeyOf(prefix: string): string {
  return `{${prefix}}:format`;
}

/**
 * Records this build's data format under `prefix` when none is recorded (a new deployment, or
 * Redis lost its data), then refuses with SB_STORE_FORMAT_UNSUPPORTED when the one recorded is
 * another: what a newer build stored there is not what these scripts expect. Called by every
 * store of the package when it connects, before it defines or runs a script.
 */
export async function assertDataFormat(client: RedisClient, prefix: string): Promise<void> {
  const key = dataFormatKeyOf(prefix);
  await client.set(key, DATA_FORMAT_VERSION, 'NX');
  const found = await client.get(key);
  if (found === String(DATA_FORMAT_VERSION)) return;
  throw new SwitchboardError('SB_STORE_FORMAT_UNSUPPORTED', {
    message: `store.prefix ${prefix}: redis holds data format ${found}, this build reads format ${DATA_FORMAT_VERSION}; upgrade Switchboard, or give this build another store.prefix`,
    details: { store: 'redis', prefix, found, reads: DATA_FORMAT_VERSION },
  });
}
