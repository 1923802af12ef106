import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { forPickedTenant } from '../tenant-scope.js';
import type { DeadLetter, MessagePath, SelectionResults } from '../api-types.js';
import { PageHeading } from '../components/page-heading.js';
import { Problem } from '../components/problem.js';
import { formatTime, outcomeText } from '../format.js';
import { href } from '../hash-route.js';
import { usePoll } from '../use-poll.js';

/** An action on a dead letter still under way, or the one that failed. */
type ActionState = { action: 'replaying' | 'purging' } | { action: 'failed'; message: string };

/** A dead letter replayed from this page: it leaves the list, and its message ends anew. */
interface Replay {
  deadLetter: DeadLetter;
  /** When the replay was accepted (ms). */
  at: number;
  /** The message's path once the replay ended: then it is no longer polled. */
  ended?: MessagePath;
}

/** Replays shown: the newest ones, so a long session's list and polling stay bounded. */
const MAX_REPLAYS_SHOWN = 100;

/** Dead letters with reason and error; replay or purge one or a selection; replay state shown. */
export function DeadLettersPage() {
  const list = usePoll(
    (signal) => api<{ items: DeadLetter[] }>(forPickedTenant('/admin/dead-letters?limit=200'), { signal }),
    5000,
  );
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [actions, setActions] = useState<Record<string, ActionState>>({});
  const [replays, setReplays] = useState<Replay[]>([]);
  const items = list.data?.items ?? [];
  const running = replays.filter((replay) => replay.ended === undefined);
  const latest = usePoll(
    async () => {
      // allSettled: a message the gateway no longer knows (404) must not stop the others' updates.
      const answers = await Promise.allSettled(
        running.map((replay) =>
          api<MessagePath>(`/admin/messages/${encodeURIComponent(replay.deadLetter.message_id)}`),
        ),
      );
      const paths = new Map<Replay, MessagePath>();
      answers.forEach((answer, index) => {
        const replay = running[index];
        if (answer.status === 'fulfilled' && replay !== undefined) paths.set(replay, answer.value);
      });
      setReplays((shown) =>
        shown.map((replay) => {
          const path = paths.get(replay);
          return path !== undefined && replayState(replay.deadLetter, path) !== 'running'
            ? { ...replay, ended: path }
            : replay;
        }),
      );
      return Object.fromEntries([...paths].map(([replay, path]) => [replay.deadLetter.message_id, path]));
    },
    2000,
    running.map((replay) => replay.deadLetter.message_id).join(','),
  );

  /** Replays or purges one or a selection through the selection routes; each id gets its own result. */
  async function act(ids: string[], action: 'replaying' | 'purging') {
    setActions((states) => ({ ...states, ...Object.fromEntries(ids.map((id) => [id, { action }])) }));
    const route = action === 'replaying' ? 'replay' : 'purge';
    let results: SelectionResults['results'];
    try {
      ({ results } = await api<SelectionResults>(`/admin/dead-letters/${route}`, {
        method: 'POST',
        body: { ids },
      }));
    } catch (error) {
      results = ids.map((id) => ({ id, ok: false, error: { code: '', message: (error as Error).message } }));
    }
    const at = Date.now();
    const accepted = new Set(results.filter((result) => result.ok).map((result) => result.id));
    if (action === 'replaying')
      setReplays((shown) =>
        [
          ...items.filter((item) => accepted.has(item.id)).map((deadLetter) => ({ deadLetter, at })),
          ...shown,
        ].slice(0, MAX_REPLAYS_SHOWN),
      );
    setActions((states) => {
      const next = { ...states };
      for (const result of results) {
        if (result.ok) delete next[result.id];
        else next[result.id] = { action: 'failed', message: result.error.message };
      }
      return next;
    });
    setSelected(new Set());
    list.refresh();
  }

  function toggle(id: string, on: boolean) {
    const next = new Set(selected);
    if (on) next.add(id);
    else next.delete(id);
    setSelected(next);
  }

  const chosen = [...selected];
  return (
    <>
      <PageHeading>Dead letters</PageHeading>
      <Problem error={list.error} />
      <fieldset class="toolbar">
        <legend class="visually-hidden">Selected dead letters</legend>
        <button type="button" disabled={chosen.length === 0} onClick={() => void act(chosen, 'replaying')}>
          Replay selected ({chosen.length})
        </button>
        <button
          type="button"
          class="danger"
          disabled={chosen.length === 0}
          onClick={() => {
            if (confirm(`Purge ${chosen.length} dead letter(s)? They cannot be replayed afterwards.`))
              void act(chosen, 'purging');
          }}
        >
          Purge selected
        </button>
      </fieldset>
      <div class="table-wrap">
        <table aria-label="Dead letters">
          <caption>
            {items.length === 0 ? 'No dead letters.' : `${items.length} dead letters, newest first`}
          </caption>
          <thead>
            <tr>
              <th scope="col">
                <span class="visually-hidden">Select</span>
              </th>
              <th scope="col">Time</th>
              <th scope="col">Reason</th>
              <th scope="col">Error</th>
              <th scope="col">Text</th>
              <th scope="col">Pipeline</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {items.map((item) => {
              const state = actions[item.id];
              return (
                <tr key={item.id}>
                  <td>
                    <input
                      type="checkbox"
                      aria-label={`Select dead letter ${item.id}`}
                      checked={selected.has(item.id)}
                      onChange={(event) => toggle(item.id, event.currentTarget.checked)}
                    />
                  </td>
                  <td>
                    <a href={href(['messages', item.message_id])}>{formatTime(item.at)}</a>
                  </td>
                  <td>{item.reason}</td>
                  <td class="text error">{item.error ?? '—'}</td>
                  <td class="text">{item.text ?? '—'}</td>
                  <td>{item.pipeline ?? '—'}</td>
                  <td>
                    <div class="row-actions">
                      <button
                        type="button"
                        disabled={!item.replayable || state !== undefined}
                        title={
                          item.replayable ? undefined : 'Kept without its whole text: cannot be replayed'
                        }
                        onClick={() => void act([item.id], 'replaying')}
                      >
                        Replay<span class="visually-hidden"> {item.id}</span>
                      </button>
                      <button
                        type="button"
                        class="danger"
                        disabled={state !== undefined && state.action !== 'failed'}
                        onClick={() => {
                          if (confirm('Purge this dead letter? It cannot be replayed afterwards.'))
                            void act([item.id], 'purging');
                        }}
                      >
                        Purge<span class="visually-hidden"> {item.id}</span>
                      </button>
                    </div>
                    <span class="action-state" aria-live="polite">
                      {state === undefined
                        ? ''
                        : state.action === 'failed'
                          ? `failed: ${state.message}`
                          : `${state.action}…`}
                    </span>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>

      {replays.length > 0 && (
        <div class="table-wrap">
          <table aria-label="Replays">
            <caption>Replayed from this page: each message runs again and ends anew</caption>
            <thead>
              <tr>
                <th scope="col">Replayed</th>
                <th scope="col">Text</th>
                <th scope="col">Now</th>
              </tr>
            </thead>
            <tbody>
              {replays.map(({ deadLetter, at, ended }) => (
                <tr key={deadLetter.id}>
                  <td>
                    <a href={href(['messages', deadLetter.message_id])}>{formatTime(at)}</a>
                  </td>
                  <td class="text">{deadLetter.text ?? '—'}</td>
                  <td class="replay-state" aria-live="polite">
                    {replayState(deadLetter, ended ?? latest.data?.[deadLetter.message_id])}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

/** `running` until the message has an outcome newer than its dead letter, then that outcome. */
function replayState(deadLetter: DeadLetter, now: MessagePath | undefined): string {
  const outcome = now?.outcome;
  if (outcome == null || outcome.at <= deadLetter.at) return 'running';
  return outcomeText(outcome.status, outcome.reason);
}
