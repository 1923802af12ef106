function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * Cuts `text` into pieces of at most `limit` UTF-16 code units (what platforms count as
 * characters), in order, for replies longer than a platform message (Telegram 4096, Discord 2000,
 * Slack 4000). Prefers the last newline, then the last space, in the second half of each window
 * (the separator is dropped); otherwise cuts hard, but never inside a surrogate pair, so no emoji
 * is broken in two. Whitespace-only pieces are dropped: platforms refuse empty messages.
 */
export function splitText(text: string, limit: number): string[] {
  const pieces: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    const window = rest.slice(0, limit + 1);
    const half = Math.max(1, Math.floor(limit / 2));
    const newline = window.lastIndexOf('\n', limit);
    const space = window.lastIndexOf(' ', limit);
    const separator = newline >= half ? newline : space >= half ? space : -1;
    if (separator >= 0) {
      pieces.push(rest.slice(0, separator));
      rest = rest.slice(separator + 1);
    } else {
      const cut = isHighSurrogate(rest.charCodeAt(limit - 1)) ? limit - 1 : limit;
      pieces.push(rest.slice(0, cut));
      rest = rest.slice(cut);
    }
  }
  pieces.push(rest);
  return pieces.filter((piece) => piece.trim() !== '');
}
