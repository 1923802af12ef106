import { api } from '../api.js';
import type { Queues } from '../api-types.js';
import { PageHeading } from '../components/page-heading.js';
import { Problem } from '../components/problem.js';
import { formatTime } from '../format.js';
import { usePoll } from '../use-poll.js';

/** The pool's counts, turns per pipeline, pipeline workers, replicas and channel holders; live. */
export function SessionsPage() {
  const queues = usePoll(() => api<Queues>('/admin/queues'), 2000);
  const data = queues.data;
  return (
    <>
      <PageHeading>Sessions &amp; queues</PageHeading>
      <Problem error={queues.error} />
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
              <caption>Turns running per pipeline</caption>
              <thead>
                <tr>
                  <th scope="col">Pipeline</th>
                  <th scope="col" class="num">
                    Running
                  </th>
                  <th scope="col">Workers</th>
                </tr>
              </thead>
              <tbody>
                {Object.entries(data.inflightByPipeline).map(([pipeline, running]) => {
                  const status = data.pipelines[pipeline];
                  return (
                    <tr key={pipeline}>
                      <th scope="row">{pipeline}</th>
                      <td class="num">{running}</td>
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
