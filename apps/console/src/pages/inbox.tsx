import { api } from '../api.js';
import { forPickedTenant } from '../tenant-scope.js';
import type { HandoffView } from '../api-types.js';
import { PageHeading } from '../components/page-heading.js';
import { Problem } from '../components/problem.js';
import { formatDuration, senderText } from '../format.js';
import { href } from '../hash-route.js';
import { usePoll } from '../use-poll.js';

/** How many sessions in handoff the inbox lists. */
const HANDOFFS_LISTED = 50;

/** Sessions an operator took over, the longest waiting for an answer first; live. */
export function InboxPage() {
  const list = usePoll(
    (signal) =>
      api<{ items: HandoffView[] }>(forPickedTenant(`/admin/handoffs?limit=${HANDOFFS_LISTED}`), { signal }),
    2000,
  );
  const items = list.data?.items ?? [];
  return (
    <>
      <PageHeading>Inbox</PageHeading>
      <Problem error={list.error} />
      {list.data && (
        <div class="table-wrap">
          <table aria-label="Sessions in handoff">
            <caption>
              {items.length === 0
                ? 'No session is in handoff: the bot answers every conversation.'
                : `${items.length} session${items.length === 1 ? '' : 's'} in handoff, the longest waiting first`}
            </caption>
            <thead>
              <tr>
                <th scope="col">Session</th>
                <th scope="col" class="num">
                  Unread
                </th>
                <th scope="col" class="num">
                  Waiting
                </th>
                <th scope="col">Last message</th>
                <th scope="col">User</th>
                <th scope="col">Reason</th>
                <th scope="col">Taken over by</th>
              </tr>
            </thead>
            <tbody>
              {items.map((handoff) => (
                <tr key={handoff.session} class={handoff.unread > 0 ? 'unread' : undefined}>
                  <th scope="row" class="mono">
                    <a href={href(['sessions', handoff.session])}>{handoff.session}</a>
                  </th>
                  <td class="num">{handoff.unread}</td>
                  <td class="num">
                    {handoff.waiting_since === null
                      ? '—'
                      : formatDuration(Date.now() - handoff.waiting_since)}
                  </td>
                  <td class="text">{handoff.last_text ?? '—'}</td>
                  <td>{handoff.sender === null ? '—' : senderText(handoff.sender)}</td>
                  <td>{handoff.reason}</td>
                  <td>{handoff.by}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
