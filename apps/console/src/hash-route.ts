import { useEffect, useState } from 'preact/hooks';

/** Where the console is: `#/messages/01H…?text=hi` → path `['messages', '01H…']`, params `text=hi`. */
export interface HashRoute {
  path: string[];
  params: URLSearchParams;
}

/** The current hash route; hash routes need no server fallback and keep a search bookmarkable. */
export function useHashRoute(): HashRoute {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const changed = () => setHash(location.hash);
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);
  const [path = '', search = ''] = hash.replace(/^#\/?/, '').split('?');
  const parts = path.split('/').filter(Boolean).map(decodedOrAsIs);
  return { path: parts.length === 0 ? ['overview'] : parts, params: new URLSearchParams(search) };
}

/** The hash link to a console page, with `params` when some are given. */
export function href(parts: string[], params?: URLSearchParams): string {
  const search = params?.toString() ?? '';
  return `#/${parts.map(encodeURIComponent).join('/')}${search === '' ? '' : `?${search}`}`;
}

/** A hash part decoded; a malformed escape (`%E0`, typed or pasted) is kept as typed, not a blank page. */
function decodedOrAsIs(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
