import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

/** What `usePoll` holds: the last answer, the last failure, and a way to ask again now. */
export interface Polled<T> {
  data: T | undefined;
  error: Error | undefined;
  refresh(): void;
}

/** An answer or a failure, with the key it was loaded for. */
interface Loaded<T> {
  key: string;
  data: T | undefined;
  error: Error | undefined;
}

/**
 * Calls `load` now and every `intervalMs` while the page is shown (never two at once), so a page
 * updates live without a reload. `intervalMs` 0 loads once. A `key` change (another message's
 * page) shows nothing of the previous key from its first render on, aborts the load under way
 * (`load` gets the signal) and loads at once: an answer that comes for an older key is never
 * shown, however late. `refresh()` (after an action) does the same for the same key: a poll
 * under way may have been answered before the action, so it is aborted and the load starts anew.
 */
export function usePoll<T>(
  load: (signal: AbortSignal) => Promise<T>,
  intervalMs: number,
  key = '',
): Polled<T> {
  const [loaded, setLoaded] = useState<Loaded<T>>({ key, data: undefined, error: undefined });
  const loadRef = useRef(load);
  loadRef.current = load;
  const keyRef = useRef(key);
  keyRef.current = key;
  /** The load under way, if any. */
  const inFlight = useRef<AbortController | null>(null);

  /** Starts a load; one under way is aborted when `restart`, else this one is skipped. */
  const start = useCallback((restart: boolean) => {
    if (inFlight.current !== null) {
      if (!restart) return;
      inFlight.current.abort();
    }
    const loading = new AbortController();
    inFlight.current = loading;
    const loadingKey = keyRef.current;
    loadRef
      .current(loading.signal)
      .then(
        (data) => {
          if (!loading.signal.aborted) setLoaded({ key: loadingKey, data, error: undefined });
        },
        (failure: Error) => {
          if (loading.signal.aborted) return;
          // A failure keeps the last answer of the same key on screen, beside the error.
          setLoaded((shown) => ({
            key: loadingKey,
            data: shown.key === loadingKey ? shown.data : undefined,
            error: failure,
          }));
        },
      )
      .finally(() => {
        if (inFlight.current === loading) inFlight.current = null;
      });
  }, []);
  const refresh = useCallback(() => start(true), [start]);

  useEffect(() => {
    start(true);
    const timer =
      intervalMs === 0
        ? undefined
        : setInterval(() => {
            if (document.visibilityState === 'visible') start(false);
          }, intervalMs);
    return () => {
      clearInterval(timer);
      // A new key (or leaving the page) ends the load under way; its answer would be stale.
      inFlight.current?.abort();
      inFlight.current = null;
    };
  }, [start, intervalMs, key]);

  // Until the first answer for a new key comes, the previous key's is not this page's.
  const current = loaded.key === key;
  return { data: current ? loaded.data : undefined, error: current ? loaded.error : undefined, refresh };
}
