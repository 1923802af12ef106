/**
 * A UTF-16 surrogate without its other half. JSON may carry one (`"\ud800"`), but it is no text:
 * `encodeURIComponent` throws a URIError on it and UTF-8 encoders replace it with U+FFFD.
 */
export const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** True when `text` holds an unpaired surrogate (`!text.isWellFormed()`, which lib ES2023 does not type). */
export function hasUnpairedSurrogate(text: string): boolean {
  return text.search(UNPAIRED_SURROGATE) >= 0;
}
