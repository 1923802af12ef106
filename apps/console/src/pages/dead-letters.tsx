import { useState } from 'preact/hooks';
import { api } from '../api.js';
import type { DeadLetter, MessagePath, SelectionResults } from '../api-types.js';
import { PageHeading } from '../components/page-heading.js';
import { Problem } from '../components/problem.js';
import { formatTime, outcomeText } from '../format.js';
import { href } from '../hash-route.js';
import { usePoll } from '../use-poll.js';

/** An action on a dead letter still under way, or the one that failed; the list shows the rest. */
type ActionState = { action: 'replaying' | 'purging' } | { action: 'failed'; message: string };

/** Dead letters with reason and error; replay or purge one or a selection; replay state shown. */
export function DeadLettersPage() {
  const list = usePoll(() => api<{ items: DeadLetter[] }>('/admin/dead-letters?limit=200'), 5000);
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [actions, setActions] = useState<Record<string, ActionState>>({});
  const items = list.data?.items ?? [];
  // The latest outcome of each replayed message: a replay queues it again, and it ends anew.
  const replayed = items.filter((item) => item.replayed_at !== null).map((item) => item.message_id);
  const latest = usePoll(
    async () =>
      Object.fromEntries(
        await Promise.all(
          replayed.map(
            async (id) => [id, await api<MessagePath>(`/admin/messages/${encodeURIComponent(id)}`)] as const,
          ),
        ),
      ),
    3000,
    replayed.join(','),
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
        <table>
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
              <th scope="col">Replay</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {items.map((item) => {
              const state = actions[item.id];
              const now = latest.data?.[item.message_id];
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
                  <td class="replay-state" aria-live="polite">
                    {replayState(item, state, now)}
                  </td>
                  <td class="row-actions">
                    <button
                      type="button"
                      disabled={!item.replayable || item.replayed_at !== null}
                      title={item.replayable ? undefined : 'Kept without its whole text: cannot be replayed'}
                      onClick={() => void act([item.id], 'replaying')}
                    >
                      Replay<span class="visually-hidden"> {item.id}</span>
                    </button>
                    <button
                      type="button"
                      class="danger"
                      onClick={() => {
                        if (confirm('Purge this dead letter? It cannot be replayed afterwards.'))
                          void act([item.id], 'purging');
                      }}
                    >
                      Purge<span class="visually-hidden"> {item.id}</span>
                    </button>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </>
  );
}

function replayState(item: DeadLetter, state: ActionState | undefined, now: MessagePath | undefined): string {
  if (state?.action === 'replaying') return 'replaying…';
  if (state?.action === 'purging') return 'purging…';
  if (state?.action === 'failed') return `failed: ${state.message}`;
  if (item.replayed_at === null) return item.replayable ? 'not replayed' : 'not replayable';
  // The message ends anew after a replay: an outcome older than the replay is the dead letter's own.
  const outcome = now?.outcome;
  if (outcome == null || outcome.at < item.replayed_at)
    return `replayed ${formatTime(item.replayed_at)}, running`;
  return `replayed → ${outcomeText(outcome.status, outcome.reason)}`;
}
