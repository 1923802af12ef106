import { createHash, timingSafeEqual } from 'node:crypto';

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/**
 * Whether two strings are equal, in time that depends on neither their contents nor their
 * lengths: both sides are hashed first, so `timingSafeEqual` always compares 32 bytes and a
 * mismatched length leaks nothing (grammY's webhook adapters compare secrets the same way).
 */
export function constantTimeEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}
