import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError, api, readEventStream } from './api.js';
import type { EntryView, HandoffView, SessionView } from './api-types.js';

/** How long after a lost event stream the page loads the session again and reconnects. */
const RECONNECT_DELAY_MS = 2000;

/** What `useConversation` holds: the session as it is now, the last failure, and a way to reload. */
export interface Conversation {
  data: SessionView | undefined;
  error: Error | undefined;
  /** Loads the session anew and reconnects its stream (after an action). */
  reload(): void;
}

/** An answer or a failure, with the session it was loaded for. */
interface Loaded {
  key: string;
  data: SessionView | undefined;
  error: Error | undefined;
}

/**
 * A session's handoff, transcript and history, kept live: loaded once, then its event stream
 * (`/admin/sessions/{key}/events?after=<last seq>`) updates the handoff's counts and appends each
 * new entry without a reload. When another handoff is in force than the one loaded (it began or
 * ended), its transcript is another, so the session is loaded again and the stream reopened; so
 * too, a little later, after a lost stream or a 5xx. Nothing of a previous `key` is shown.
 */
export function useConversation(key: string): Conversation {
  const [loaded, setLoaded] = useState<Loaded>({ key, data: undefined, error: undefined });
  /** Bumped to load and connect anew. */
  const [generation, setGeneration] = useState(0);
  const reload = useCallback(() => setGeneration((count) => count + 1), []);

  useEffect(() => {
    const stop = new AbortController();
    let retry: ReturnType<typeof setTimeout> | undefined;
    const path = `/admin/sessions/${encodeURIComponent(key)}`;
    /** Shows `update` of what was loaded for this key (nothing until the first answer came). */
    const show = (update: (data: SessionView) => SessionView) =>
      setLoaded((shown) =>
        shown.key === key && shown.data !== undefined ? { ...shown, data: update(shown.data) } : shown,
      );

    (async () => {
      const data = await api<SessionView>(path, { signal: stop.signal });
      setLoaded({ key, data, error: undefined });
      const startedAt = data.handoff?.started_at ?? null;
      let lastSeq = data.transcript.at(-1)?.seq ?? 0;
      await readEventStream(
        `${path}/events?after=${lastSeq}`,
        (event) => {
          if (event.event === 'handoff') {
            const handoff = JSON.parse(event.data) as HandoffView | null;
            if ((handoff?.started_at ?? null) !== startedAt) {
              stop.abort();
              reload();
              return;
            }
            show((shown) => ({ ...shown, handoff }));
          } else if (event.event === 'entry') {
            const entry = JSON.parse(event.data) as EntryView;
            // The stream starts after the last entry loaded; a repeat after a reconnect is skipped.
            if (entry.seq <= lastSeq) return;
            lastSeq = entry.seq;
            show((shown) => ({ ...shown, transcript: [...shown.transcript, entry] }));
          }
        },
        stop.signal,
      );
      throw new Error('The live updates stopped; reconnecting…');
    })().catch((failure: Error) => {
      if (stop.signal.aborted) return;
      // A failure keeps what was shown of the same session, beside the error.
      setLoaded((shown) => ({ key, data: shown.key === key ? shown.data : undefined, error: failure }));
      // A refusal or a bad key stays what it is; a lost connection or a 5xx may pass.
      if (!(failure instanceof ApiError && failure.status < 500))
        retry = setTimeout(reload, RECONNECT_DELAY_MS);
    });

    return () => {
      stop.abort();
      clearTimeout(retry);
    };
  }, [key, generation, reload]);

  const current = loaded.key === key;
  return { data: current ? loaded.data : undefined, error: current ? loaded.error : undefined, reload };
}
