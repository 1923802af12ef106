import type { Redis } from 'ioredis';

/** Deletes every key of a pool prefix (`{<prefix>}:*`), found with SCAN (KEYS would block a shared Redis). */
export async function removePoolKeys(admin: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', `{${prefix}}:*`, 'COUNT', 1000);
    if (keys.length > 0) await admin.unlink(...keys);
    cursor = next;
  } while (cursor !== '0');
}
