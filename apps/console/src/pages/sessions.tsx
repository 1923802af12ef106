import { api } from '../api.js';
import type { Queues, Sessions } from '../api-types.js';
import { PageHeading } from '../components/page-heading.js';
import { Problem } from '../components/problem.js';
import { TakeOverButton } from '../components/take-over-button.js';
import { formatDuration, formatTime } from '../format.js';
import { href } from '../hash-route.js';
import { currentScope, forPickedTenant } from '../tenant-scope.js';
import { usePoll } from '../use-poll.js';

/** How many sessions the page lists as waiting longest. */
const SESSIONS_LISTED = 50;

/**
 * The pool's counts, queues per pipeline, running turns (with the replica running each when
 * replicas share the pool), the sessions waiting longest, pipeline workers, replicas and channel
 * holders; live.
 */
export function SessionsPage() {
  // The queues are the whole gateway's: a tenant token may not read them (403).
  const gatewayWide = currentScope().tenant === null;
  const queues = usePoll(
    () => (gatewayWide ? api<Queues>('/admin/queues') : Promise.resolve(undefined)),
    gatewayWide ? 2000 : 0,
  );
  const sessions = usePoll(
    () => api<Sessions>(forPickedTenant(`/admin/sessions?limit=${SESSIONS_LISTED}`)),
    2000,
  );
  const data = queues.data;
  return (
    <>
      <PageHeading>Sessions &amp; queues</PageHeading>
      <Problem error={queues.error ?? sessions.error} />
      {data && (
        <>
          <dl class="stats" aria-label="Query pool">
            <div>
              <dt>Waiting</dt>
              <dd>{data.pending}</dd>
            </div>
            <div>
              <dt>Turns running</dt>
              <dd>{data.inflight}</dd>
            </div>
            <div>
              <dt>Active sessions</dt>
              <dd>{data.sessions}</dd>
            </div>
          </dl>
          <div class="table-wrap">
            <table>
              <caption>Queues per pipeline</caption>
              <thead>
                <tr>
                  <th scope="col">Pipeline</th>
                  <th scope="col" class="num">
                    Running
                  </th>
                  <th scope="col" class="num">
                    Waiting
                  </th>
                  <th scope="col" class="num">
                    Oldest wait
                  </th>
                  <th scope="col">Workers</th>
                </tr>
              </thead>
              <tbody>
                {Object.entries(data.inflightByPipeline).map(([pipeline, running]) => {
                  const status = data.pipelines[pipeline];
                  const waiting = data.pendingByPipeline[pipeline] ?? 0;
                  return (
                    <tr key={pipeline}>
                      <th scope="row">{pipeline}</th>
                      <td class="num">{running}</td>
                      <td class="num">{waiting}</td>
                      <td class="num">
                        {waiting === 0 ? '—' : formatDuration(data.oldestWaitMsByPipeline[pipeline] ?? 0)}
                      </td>
                      <td>
                        {status === undefined
                          ? '—'
                          : `${status.ok ? 'ok' : 'failing'}${status.detail ? `: ${status.detail}` : ''}`}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
          {sessions.data && <SessionTables data={sessions.data} />}
          {data.replicas && (
            <div class="table-wrap">
              <table>
                <caption>Replicas sharing the pool</caption>
                <thead>
                  <tr>
                    <th scope="col">Replica</th>
                    <th scope="col">Alive</th>
                    <th scope="col">Heartbeat until</th>
                    <th scope="col">Turns it runs</th>
                  </tr>
                </thead>
                <tbody>
                  {data.replicas.map((replica) => (
                    <tr key={replica.id}>
                      <th scope="row" class="mono">
                        {replica.id}
                      </th>
                      <td>{replica.alive ? 'yes' : 'no'}</td>
                      <td>{formatTime(replica.heartbeat_expires_at)}</td>
                      <td class="num">{replica.turns_running}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          {data.channels.length > 0 && (
            <div class="table-wrap">
              <table>
                <caption>Single-owner channels and who holds each</caption>
                <thead>
                  <tr>
                    <th scope="col">Channel</th>
                    <th scope="col">Type</th>
                    <th scope="col">Here</th>
                    <th scope="col">Holder</th>
                  </tr>
                </thead>
                <tbody>
                  {data.channels.map((channel) => (
                    <tr key={channel.id}>
                      <th scope="row">{channel.id}</th>
                      <td>{channel.type}</td>
                      <td>{channel.state}</td>
                      <td class="mono">{channel.holder ?? '—'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </>
  );
}

/** Running turns, oldest first, and the ready sessions waiting longest (`/admin/sessions`). */
function SessionTables({ data }: { data: Sessions }) {
  // The replica column only means something when replicas share the pool.
  const replicas = data.running.some((turn) => turn.replica !== null);
  return (
    <>
      <div class="table-wrap">
        <table>
          <caption>Turns running</caption>
          <thead>
            <tr>
              <th scope="col">Session</th>
              <th scope="col">Pipeline</th>
              <th scope="col" class="num">
                Running for
              </th>
              <th scope="col" class="num">
                Messages
              </th>
              <th scope="col" class="num">
                Waiting behind
              </th>
              {replicas && <th scope="col">Replica</th>}
              <th scope="col">Operator</th>
            </tr>
          </thead>
          <tbody>
            {data.running.length === 0 && (
              <tr>
                <td colSpan={replicas ? 7 : 6} class="hint">
                  No turn is running.
                </td>
              </tr>
            )}
            {data.running.map((turn) => (
              <tr key={turn.turn_id}>
                <th scope="row" class="mono">
                  <a href={href(['sessions', turn.session])}>{turn.session}</a>
                </th>
                <td>{turn.pipeline}</td>
                <td class="num">{formatDuration(turn.age_ms)}</td>
                <td class="num">{turn.messages}</td>
                <td class="num">{turn.pending}</td>
                {replicas && <td class="mono">{turn.replica ?? '—'}</td>}
                <td>
                  <TakeOverButton session={turn.session} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <div class="table-wrap">
        <table>
          <caption>Sessions waiting longest for a slot</caption>
          <thead>
            <tr>
              <th scope="col">Session</th>
              <th scope="col">Pipeline</th>
              <th scope="col" class="num">
                Waiting
              </th>
              <th scope="col" class="num">
                Oldest wait
              </th>
              <th scope="col">Operator</th>
            </tr>
          </thead>
          <tbody>
            {data.waiting.length === 0 && (
              <tr>
                <td colSpan={5} class="hint">
                  No session waits for a slot.
                </td>
              </tr>
            )}
            {data.waiting.map((session) => (
              <tr key={session.session}>
                <th scope="row" class="mono">
                  <a href={href(['sessions', session.session])}>{session.session}</a>
                </th>
                <td>{session.pipeline}</td>
                <td class="num">{session.pending}</td>
                <td class="num">{formatDuration(session.oldest_wait_ms)}</td>
                <td>
                  <TakeOverButton session={session.session} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
