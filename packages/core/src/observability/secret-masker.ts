/**
 * Hides configured secret values in text that leaves the process: log lines, audit records,
 * error excerpts. One masker is built from every secret of the configuration (see
 * `secretValues`) and applied where text is finally written (every log line, every outcome's
 * error). Code that cuts text to a length masks it before the cut, never after: a secret cut in
 * half no longer matches, and its first half would stay visible.
 */

/** What replaces a secret. */
export const SECRET_MASK = '***';

/**
 * Values shorter than this are not masked: they are no secrets worth the name (guessable), and
 * replacing them everywhere would garble ordinary text — an `X-Version: 2` header value would
 * mask every "2" of every log line, and a short value can break a JSON line apart.
 */
export const MIN_MASKED_CHARS = 8;

/** Returns `text` with every secret replaced by `SECRET_MASK`. */
export type SecretMasker = (text: string) => string;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * A masker for `secrets`. Each secret is also matched as it appears inside a JSON string (a log
 * line escapes `"` and `\`) and percent-encoded (a proxy echoing the request URL). The work is
 * one precompiled search per call, and none for text that is never written.
 */
export function createSecretMasker(secrets: Iterable<string | undefined>): SecretMasker {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (secret === undefined || secret.length < MIN_MASKED_CHARS) continue;
    forms.add(secret);
    forms.add(JSON.stringify(secret).slice(1, -1));
    forms.add(encodeURIComponent(secret));
  }
  if (forms.size === 0) return (text) => text;
  // Longest first, so that a secret that contains another is masked whole. An alternation of
  // literals: no nested quantifier, so the search stays linear in the text.
  const pattern = new RegExp(
    [...forms]
      .sort((a, b) => b.length - a.length)
      .map(escapeRegExp)
      .join('|'),
    'g',
  );
  return (text) => text.replace(pattern, SECRET_MASK);
}
