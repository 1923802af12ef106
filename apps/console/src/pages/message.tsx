import { api } from '../api.js';
import type { MessagePath } from '../api-types.js';
import { PageHeading } from '../components/page-heading.js';
import { Problem } from '../components/problem.js';
import { TakeOverButton } from '../components/take-over-button.js';
import { formatDuration, formatTime, outcomeText } from '../format.js';
import { href } from '../hash-route.js';
import { usePoll } from '../use-poll.js';

/** One message's whole path: received, routed, merged, turns, replies, outcome. Live while it runs. */
export function MessagePage({ id }: { id: string }) {
  const path = usePoll(
    (signal) => api<MessagePath>(`/admin/messages/${encodeURIComponent(id)}`, { signal }),
    3000,
    id,
  );
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
      {data && <SessionLine data={data} />}
      {data && <Path data={data} />}
    </>
  );
}

/** The message's session, to open or take over (none known, none shown). */
function SessionLine({ data }: { data: MessagePath }) {
  const { session } = data;
  if (session === null) return null;
  return (
    <p class="session-line">
      Session{' '}
      <a href={href(['sessions', session])} class="mono">
        {session}
      </a>{' '}
      <TakeOverButton session={session} />
    </p>
  );
}

function Path({ data }: { data: MessagePath }) {
  const { received, routed, outcome } = data;
  return (
    <ol class="path" aria-label="Path of the message">
      <li>
        <h2>Received</h2>
        {received ? (
          <dl>
            <dt>At</dt>
            <dd>{received.at === null ? 'not known' : formatTime(received.at)}</dd>
            <dt>Channel</dt>
            <dd>
              {received.channel} ({received.platform})
            </dd>
            <dt>Chat</dt>
            <dd class="mono">
              {received.chat_type} {received.chat_id}
            </dd>
            <dt>Sender</dt>
            <dd>
              {received.sender_name === null
                ? received.sender_id
                : `${received.sender_name} (${received.sender_id})`}
            </dd>
            <dt>Text</dt>
            <dd class="text">{received.text ?? 'not kept (audit.store_text)'}</dd>
          </dl>
        ) : (
          <p>Not recorded.</p>
        )}
      </li>
      <li>
        <h2>Routed</h2>
        {routed ? (
          <p>
            {routed.by_default ? (
              'No rule matched: the default'
            ) : (
              <>
                Rule <strong class="rule">{routed.rule}</strong>
              </>
            )}
            {routed.pipeline !== null && (
              <>
                {' '}
                → pipeline <strong>{routed.pipeline}</strong>
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
          <p>No turn ran on this replica (or it was forgotten since).</p>
        ) : (
          <ol>
            {data.turns.map((turn) => (
              <li key={`${turn.id}-${turn.attempt}`}>
                Attempt {turn.attempt} on <strong>{turn.pipeline}</strong> at {formatTime(turn.started_at)}:{' '}
                {turn.result ?? 'running'}
                {turn.duration_ms !== null && ` in ${formatDuration(turn.duration_ms)}`}
                {turn.retry_delay_ms !== null && `, retried after ${formatDuration(turn.retry_delay_ms)}`}
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
              <li key={`${index}-${reply.text}`} class="text">
                {reply.text ?? '(no text)'}
                {reply.attachments?.length
                  ? ` (+ ${reply.attachments.map((file) => file.name ?? file.type).join(', ')})`
                  : ''}
              </li>
            ))}
          </ul>
        )}
      </li>
      <li>
        <h2>Outcome</h2>
        {outcome ? (
          <p>
            <span class={`badge ${outcome.status}`}>{outcomeText(outcome.status, outcome.reason)}</span> at{' '}
            {formatTime(outcome.at)}
            {outcome.error !== null && <span class="error">: {outcome.error}</span>}
          </p>
        ) : (
          <p>Still running.</p>
        )}
        {data.audit.length > 1 && (
          <details>
            <summary>Earlier outcomes ({data.audit.length - 1})</summary>
            <ul>
              {data.audit.slice(1).map((record) => (
                <li key={record.id}>
                  {formatTime(record.at)}: {outcomeText(record.outcome, record.reason)}
                  {record.error !== null && <span class="error"> — {record.error}</span>}
                </li>
              ))}
            </ul>
          </details>
        )}
      </li>
    </ol>
  );
}
