import { useState } from 'preact/hooks';
import { api } from '../api.js';
import type { EntryView, HandBack, HandoffView, SessionView } from '../api-types.js';
import { PageHeading } from '../components/page-heading.js';
import { Problem } from '../components/problem.js';
import { TakeOverButton } from '../components/take-over-button.js';
import { formatTime, senderText } from '../format.js';
import { href } from '../hash-route.js';
import { useAction } from '../use-action.js';
import { useConversation } from '../use-conversation.js';

/**
 * One session as an operator handles it: its handoff (who took it, why, what waits), the bot's
 * recent history, the handoff's transcript with new messages live, a reply box, and hand back
 * (held messages to the bot as one turn, or marked handled) — or take over when the bot has it.
 */
export function ConversationPage({ session }: { session: string }) {
  const conversation = useConversation(session);
  const [handedBack, setHandedBack] = useState<HandBack | null>(null);
  const data = conversation.data;
  return (
    <>
      <PageHeading>Session {session}</PageHeading>
      <p>
        <button type="button" class="link" onClick={() => history.back()}>
          ← Back
        </button>
      </p>
      <Problem error={conversation.error} />
      {data && (
        <>
          <section class="card handoff" aria-labelledby="handoff-state">
            <h2 id="handoff-state">{data.handoff ? 'In handoff' : 'The bot answers'}</h2>
            {data.handoff ? (
              <HandoffState handoff={data.handoff} />
            ) : (
              <>
                {handedBack && <HandBackResult result={handedBack} />}
                <TakeOverButton
                  session={session}
                  onTaken={() => {
                    setHandedBack(null);
                    conversation.reload();
                  }}
                />
              </>
            )}
          </section>
          {data.history.length > 0 && <BotHistory history={data.history} />}
          {data.handoff && (
            <>
              <Transcript entries={data.transcript} />
              <ReplyForm session={session} />
              <HandBackForm
                session={session}
                held={data.handoff.held}
                onHandedBack={(result) => {
                  setHandedBack(result);
                  conversation.reload();
                }}
              />
            </>
          )}
        </>
      )}
    </>
  );
}

function HandoffState({ handoff }: { handoff: HandoffView }) {
  return (
    <dl>
      <dt>Taken over</dt>
      <dd>
        {formatTime(handoff.started_at)} by <strong>{handoff.by}</strong>
      </dd>
      <dt>Reason</dt>
      <dd>{handoff.reason}</dd>
      <dt>Held</dt>
      <dd>
        {handoff.held} message{handoff.held === 1 ? '' : 's'},{' '}
        <span class="unread">{handoff.unread} unread</span>
        {/* A time, not a duration: the page redraws on events, not on a clock. */}
        {handoff.waiting_since !== null && `, the oldest since ${formatTime(handoff.waiting_since)}`}
      </dd>
      {handoff.sender && (
        <>
          <dt>User</dt>
          <dd>{senderText(handoff.sender)}</dd>
        </>
      )}
      {handoff.channel !== null && (
        <>
          <dt>Chat</dt>
          <dd class="mono">
            {handoff.channel} {handoff.chat_id}
          </dd>
        </>
      )}
      <dt>Pipeline</dt>
      <dd>{handoff.pipeline ?? 'not known yet'}</dd>
    </dl>
  );
}

function BotHistory({ history }: { history: SessionView['history'] }) {
  return (
    <details class="history">
      <summary>The bot's recent history ({history.length})</summary>
      <ol class="chat" aria-label="The bot's recent history">
        {history.map((turn, index) => (
          <li key={`${index}-${turn.role}`} class={turn.role === 'user' ? 'from-user' : 'from-bot'}>
            <span class="who">{turn.role === 'user' ? 'User' : 'Bot'}</span>
            <p class="text">{turn.content}</p>
          </li>
        ))}
      </ol>
    </details>
  );
}

function Transcript({ entries }: { entries: EntryView[] }) {
  return (
    <section aria-labelledby="transcript">
      <h2 id="transcript">Transcript</h2>
      {entries.length === 0 && <p class="hint">Nothing yet: the user's messages appear here as they come.</p>}
      {/* Polite: a screen reader says each new message once it has finished what it was saying. */}
      <ol class="chat" aria-label="Transcript" aria-live="polite">
        {entries.map((entry) => (
          <li key={entry.seq} class={entry.from === 'user' ? 'from-user' : 'from-operator'}>
            <span class="who">
              {entry.from === 'user' ? 'User' : 'Operator'}
              {entry.name !== null && ` ${entry.name}`} ·{' '}
              <time dateTime={new Date(entry.at).toISOString()}>{formatTime(entry.at)}</time>
            </span>
            <p class="text">{entry.text}</p>
          </li>
        ))}
      </ol>
    </section>
  );
}

/**
 * Sends a reply to the user; it shows in the transcript when the stream brings it back. The
 * reply's id is picked here and kept until it is accepted, so that sending again after a lost
 * answer sends it once.
 */
function ReplyForm({ session }: { session: string }) {
  const [text, setText] = useState('');
  const [replyId, setReplyId] = useState(newReplyId);
  const { busy, problem, run } = useAction('Not sent');

  function send(event: Event) {
    event.preventDefault();
    void run(async () => {
      await api(`/admin/sessions/${encodeURIComponent(session)}/replies`, {
        method: 'POST',
        body: { text, id: replyId },
      });
      setText('');
      setReplyId(newReplyId());
    });
  }

  return (
    <form class="stack reply" onSubmit={send}>
      <label for="reply">Reply</label>
      <textarea
        id="reply"
        rows={3}
        required
        value={text}
        onInput={(event) => {
          // Other words are another reply: the one that may have been sent keeps its id.
          setText(event.currentTarget.value);
          setReplyId(newReplyId());
        }}
        onKeyDown={(event) => {
          // Ctrl/⌘+Enter sends, as in most chat tools; Enter alone keeps its new line.
          if (event.key === 'Enter' && (event.ctrlKey || event.metaKey))
            event.currentTarget.form?.requestSubmit();
        }}
      />
      <div class="toolbar">
        <button type="submit" disabled={busy || text.trim() === ''}>
          Send reply
        </button>
      </div>
      <p role="alert" class="problem">
        {problem}
      </p>
    </form>
  );
}

/** Ends the handoff: the held messages go to the bot as one turn, or are marked handled. */
function HandBackForm({
  session,
  held,
  onHandedBack,
}: {
  session: string;
  held: number;
  onHandedBack: (result: HandBack) => void;
}) {
  const [resume, setResume] = useState<'bot' | 'skip'>('bot');
  const { busy, problem, run } = useAction('Not handed back');

  function handBack(event: Event) {
    event.preventDefault();
    void run(async () => {
      onHandedBack(
        await api<HandBack>(`/admin/sessions/${encodeURIComponent(session)}/handoff`, {
          method: 'DELETE',
          body: { resume },
        }),
      );
    });
  }

  return (
    <form class="card stack" onSubmit={handBack}>
      <fieldset class="choice">
        <legend>Hand back to the bot</legend>
        <label>
          <input
            type="radio"
            name="resume"
            value="bot"
            checked={resume === 'bot'}
            onChange={() => setResume('bot')}
          />{' '}
          Give the held messages ({held}) to the bot as one turn
        </label>
        <label>
          <input
            type="radio"
            name="resume"
            value="skip"
            checked={resume === 'skip'}
            onChange={() => setResume('skip')}
          />{' '}
          Mark them handled: the bot answers only the next message
        </label>
      </fieldset>
      <div class="toolbar">
        <button type="submit" disabled={busy}>
          Hand back
        </button>
      </div>
      <p role="alert" class="problem">
        {problem}
      </p>
    </form>
  );
}

function HandBackResult({ result }: { result: HandBack }) {
  const held = `${result.held} held message${result.held === 1 ? '' : 's'}`;
  return (
    <p class="handed-back" role="status">
      Handed back:{' '}
      {result.resumed === 'skip' ? (
        `${held} marked handled.`
      ) : result.message_id === null ? (
        'no message was held, the bot answers the next one.'
      ) : (
        <>
          {held} given to the bot as <a href={href(['messages', result.message_id])}>one turn</a>.
        </>
      )}
    </p>
  );
}

/** A reply id the admin API accepts (`[A-Za-z0-9_-]`); `getRandomValues` works on plain http too. */
function newReplyId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
}
