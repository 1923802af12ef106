import { randomFillSync } from 'node:crypto';

/** Crockford's base 32, as ULIDs use it. */
export const CROCKFORD_BASE32 = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const RANDOM_BYTES = 10;

// Random bytes are drawn 4 KiB at a time: the `ulid` package drew one value per character, which
// profiled at 15% of the gateway's CPU under load (bench/HISTORY.md#tuning-pass-1-ids-timers-group-commit).
const entropy = Buffer.alloc(4096);
let entropyOffset = entropy.length;
let lastTimeMs = -1;
const lastRandom = new Uint8Array(RANDOM_BYTES);

function refillRandom(): void {
  if (entropyOffset + RANDOM_BYTES > entropy.length) {
    randomFillSync(entropy);
    entropyOffset = 0;
  }
  lastRandom.set(entropy.subarray(entropyOffset, entropyOffset + RANDOM_BYTES));
  entropyOffset += RANDOM_BYTES;
}

/** Adds one to the 80-bit random part, so ids made within one millisecond still sort in order. */
function incrementRandom(): void {
  for (let i = RANDOM_BYTES - 1; i >= 0; i--) {
    const byte = lastRandom[i] as number;
    if (byte < 255) {
      lastRandom[i] = byte + 1;
      return;
    }
    lastRandom[i] = 0;
  }
}

/** The 26 character codes of the id being made; the time part is rewritten only when the ms changes. */
const codes: number[] = new Array(26).fill(0);
const ENCODING_CODES = Array.from(CROCKFORD_BASE32, (char) => char.charCodeAt(0));

function encodeTime(timeMs: number): void {
  let t = timeMs;
  for (let i = 9; i >= 0; i--) {
    codes[i] = ENCODING_CODES[t % 32] as number;
    t = Math.floor(t / 32);
  }
}

/**
 * A monotonic ULID (https://github.com/ulid/spec): 48 bits of milliseconds then 80 random bits,
 * 26 characters of Crockford base 32. Ids made by one process sort in creation order, also
 * within one millisecond. The characters are collected as codes and made into one string at the
 * end: adding them one by one made 26 strings per id.
 */
export function newUlid(nowMs: number = Date.now()): string {
  if (nowMs > lastTimeMs) {
    lastTimeMs = nowMs;
    encodeTime(nowMs);
    refillRandom();
  } else {
    incrementRandom();
  }
  // 80 bits = 16 groups of 5 bits, read big-endian across the bytes.
  let at = 10;
  let buffer = 0;
  let bits = 0;
  for (const byte of lastRandom) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      codes[at++] = ENCODING_CODES[(buffer >> bits) & 31] as number;
    }
    buffer &= (1 << bits) - 1;
  }
  return String.fromCharCode.apply(null, codes);
}
