import { api } from '../api.js';
import type { MessagePath } from '../api-types.js';
import { PageHeading } from '../components/page-heading.js';
import { Problem } from '../components/problem.js';
import { formatTime, outcomeText } from '../format.js';
import { href } from '../hash-route.js';
import { usePoll } from '../use-poll.js';

/** One message's whole path: received, routed, merged, turns, replies, outcome. Live while it runs. */
export function MessagePage({ id }: { id: string }) {
  const path = usePoll(() => api<MessagePath>(`/admin/messages/${encodeURIComponent(id)}`), 3000, id);
  const data = path.data;
  return (
    <>
      <PageHeading>Message {id}</PageHeading>
      <p>
        <button type="button" class="link" onClick={() => history.back()}>
          ← Back
        </button>
      </p>
      <Problem error={path.error} />
      {data && (
        <ol class="path" aria-label="Path of the message">
          <li>
            <h2>Received</h2>
            {data.received ? (
              <dl>
                <dt>At</dt>
                <dd>{formatTime(data.received.at)}</dd>
                <dt>Channel</dt>
                <dd>{data.received.channel}</dd>
                <dt>Session</dt>
                <dd class="mono">{data.received.session}</dd>
                <dt>Sender</dt>
                <dd>{data.received.sender_name ?? data.received.sender_id}</dd>
                <dt>Text</dt>
                <dd class="text">{data.received.text ?? '—'}</dd>
              </dl>
            ) : (
              <p>Not recorded.</p>
            )}
          </li>
          <li>
            <h2>Routed</h2>
            {data.routed ? (
              <p>
                Rule <strong class="rule">{data.routed.rule ?? 'default'}</strong>
                {data.routed.pipeline !== null && (
                  <>
                    {' '}
                    → pipeline <strong>{data.routed.pipeline}</strong>
                  </>
                )}
              </p>
            ) : (
              <p>Not routed.</p>
            )}
          </li>
          {data.merged_with.length > 0 && (
            <li>
              <h2>Merged with</h2>
              <ul>
                {data.merged_with.map((other) => (
                  <li key={other}>
                    <a href={href(['messages', other])} class="mono">
                      {other}
                    </a>
                  </li>
                ))}
              </ul>
            </li>
          )}
          <li>
            <h2>Turns</h2>
            {data.turns.length === 0 ? (
              <p>No turn ran.</p>
            ) : (
              <ol>
                {data.turns.map((turn) => (
                  <li key={`${turn.attempt}-${turn.at}`}>
                    Attempt {turn.attempt} at {formatTime(turn.at)}
                    {turn.error !== null && <span class="error">: {turn.error}</span>}
                  </li>
                ))}
              </ol>
            )}
          </li>
          <li>
            <h2>Replies</h2>
            {data.replies.length === 0 ? (
              <p>None.</p>
            ) : (
              <ul>
                {data.replies.map((reply, index) => (
                  <li key={index} class="text">
                    {reply.text ?? '(no text)'}
                  </li>
                ))}
              </ul>
            )}
          </li>
          <li>
            <h2>Outcome</h2>
            {data.outcome ? (
              <p>
                <span class={`badge ${data.outcome.outcome}`}>
                  {outcomeText(data.outcome.outcome, data.outcome.reason)}
                </span>{' '}
                at {formatTime(data.outcome.at)}
                {data.outcome.error !== null && <span class="error">: {data.outcome.error}</span>}
              </p>
            ) : (
              <p>Still running.</p>
            )}
          </li>
        </ol>
      )}
    </>
  );
}
