/**
 * Percent-encodes `text` for a URL path segment or query value, including what
 * `encodeURIComponent` refuses: a lone surrogate becomes the three bytes a careless UTF-8
 * encoder writes for it (WTF-8, e.g. `%ED%A0%80`), which is what an attacker would send.
 */
export function percentEncode(text: string): string {
  let encoded = '';
  for (const char of text) {
    const codePoint = char.codePointAt(0) ?? 0;
    if (codePoint >= 0xd800 && codePoint <= 0xdfff) {
      const bytes = [0xe0 | (codePoint >> 12), 0x80 | ((codePoint >> 6) & 0x3f), 0x80 | (codePoint & 0x3f)];
      encoded += bytes.map((byte) => `%${byte.toString(16).toUpperCase()}`).join('');
    } else {
      encoded += encodeURIComponent(char);
    }
  }
  return encoded;
}
