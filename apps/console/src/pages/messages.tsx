import { useEffect, useRef, useState } from 'preact/hooks';
import { api, query } from '../api.js';
import { forPickedTenant } from '../tenant-scope.js';
import { type AuditItem, OUTCOMES, type Page } from '../api-types.js';
import { PageHeading } from '../components/page-heading.js';
import { Problem } from '../components/problem.js';
import { formatTime, outcomeText } from '../format.js';
import { href } from '../hash-route.js';

/** The search fields, named as `GET /admin/messages` names its filters. */
const FIELDS = [
  { name: 'text', label: 'Text contains' },
  { name: 'session', label: 'Session' },
  { name: 'sender', label: 'Sender' },
  { name: 'channel', label: 'Channel' },
  { name: 'reason', label: 'Reason' },
  { name: 'rule', label: 'Rule' },
  { name: 'since', label: 'Since (1h or ISO date)' },
  { name: 'until', label: 'Until (ISO date)' },
] as const;

/**
 * Searches the message history; the filters live in the page address, so a search can be
 * bookmarked and the back button returns to it from a message's page.
 */
export function MessagesPage({ params }: { params: URLSearchParams }) {
  const search = params.toString();
  const [results, setResults] = useState<AuditItem[]>();
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<Error>();
  /** The search (or page of it) under way: a newer one aborts it, so only the newest answers. */
  const searching = useRef<AbortController | null>(null);

  async function load(after: string | null) {
    searching.current?.abort();
    const loading = new AbortController();
    searching.current = loading;
    const filters = Object.fromEntries(params);
    try {
      const page = await api<Page<AuditItem>>(
        forPickedTenant(`/admin/messages${query({ ...filters, limit: 50, cursor: after ?? undefined })}`),
        { signal: loading.signal },
      );
      // Aborted after its answer came in: a newer search owns the table now.
      if (loading.signal.aborted) return;
      setResults((shown) => (after === null ? page.items : [...(shown ?? []), ...page.items]));
      setCursor(page.next_cursor);
      setError(undefined);
    } catch (failure) {
      if (!loading.signal.aborted) setError(failure as Error);
    }
  }

  useEffect(() => {
    // Another search's results are not this one's: none are shown until its own answer comes.
    setResults(undefined);
    setCursor(null);
    setError(undefined);
    void load(null);
    return () => searching.current?.abort();
  }, [search]);

  function submit(event: Event) {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const next = new URLSearchParams();
    for (const [name, value] of form)
      if (typeof value === 'string' && value.trim() !== '') next.set(name, value.trim());
    // The API refuses a text search alone (it would read the whole audit log): default to a day.
    if (next.has('text') && [...next.keys()].length === 1) next.set('since', '24h');
    location.hash = href(['messages'], next);
  }

  return (
    <>
      <PageHeading>Messages</PageHeading>
      <form class="filters" onSubmit={submit} aria-label="Search messages">
        {FIELDS.map((field) => (
          <div class="field" key={field.name}>
            <label for={`filter-${field.name}`}>{field.label}</label>
            <input
              id={`filter-${field.name}`}
              name={field.name}
              defaultValue={params.get(field.name) ?? ''}
            />
          </div>
        ))}
        <div class="field">
          <label for="filter-outcome">Outcome</label>
          <select id="filter-outcome" name="outcome" defaultValue={params.get('outcome') ?? ''}>
            <option value="">any</option>
            {OUTCOMES.map((outcome) => (
              <option key={outcome} value={outcome}>
                {outcome}
              </option>
            ))}
          </select>
        </div>
        <div class="actions">
          <button type="submit">Search</button>
        </div>
      </form>
      <Problem error={error} />
      {results !== undefined && (
        <div class="table-wrap">
          <table>
            <caption>
              {results.length === 0 ? 'No message matches.' : `${results.length} messages, newest first`}
            </caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Outcome</th>
                <th scope="col">Text</th>
                <th scope="col">Channel</th>
                <th scope="col">Session</th>
                <th scope="col">Sender</th>
                <th scope="col">Rule</th>
              </tr>
            </thead>
            <tbody>
              {results.map((item) => (
                <tr key={item.id}>
                  <td>
                    <a href={href(['messages', item.message_id])}>{formatTime(item.at)}</a>
                  </td>
                  <td>
                    <span class={`badge ${item.outcome}`}>{outcomeText(item.outcome, item.reason)}</span>
                  </td>
                  <td class="text">{item.text ?? '—'}</td>
                  <td>{item.channel}</td>
                  <td class="mono">{item.session}</td>
                  <td>{item.sender_name ?? item.sender_id}</td>
                  <td>{item.rule ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {cursor !== null && (
        <button type="button" onClick={() => void load(cursor)}>
          More
        </button>
      )}
    </>
  );
}
