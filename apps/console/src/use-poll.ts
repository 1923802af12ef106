import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

/** What `usePoll` holds: the last answer, the last failure, and a way to ask again now. */
export interface Polled<T> {
  data: T | undefined;
  error: Error | undefined;
  refresh(): void;
}

/**
 * Calls `load` now and every `intervalMs` while the page is shown (never two at once), so a page
 * updates live without a reload. `intervalMs` 0 loads once. `key` changes reload at once.
 */
export function usePoll<T>(load: () => Promise<T>, intervalMs: number, key = ''): Polled<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<Error>();
  const loadRef = useRef(load);
  loadRef.current = load;
  const busy = useRef(false);

  const refresh = useCallback(() => {
    if (busy.current) return;
    busy.current = true;
    loadRef
      .current()
      .then(
        (answer) => {
          setData(answer);
          setError(undefined);
        },
        (failure: Error) => setError(failure),
      )
      .finally(() => {
        busy.current = false;
      });
  }, []);

  useEffect(() => {
    refresh();
    if (intervalMs === 0) return;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') refresh();
    }, intervalMs);
    return () => clearInterval(timer);
  }, [refresh, intervalMs, key]);

  return { data, error, refresh };
}
