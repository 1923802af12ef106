/**
 * A mime type without its parameters, lower-cased (`audio/ogg; codecs=opus` is `audio/ogg`), as
 * platforms compare them; `''` for none. Pipelines give types with parameters, platforms list
 * the bare ones they take.
 */
export function mimeEssence(mimeType: string | undefined): string {
  return (mimeType?.split(';')[0] ?? '').trim().toLowerCase();
}
