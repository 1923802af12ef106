import { api } from '../api.js';
import { OUTCOMES, type Outcome, type Overview } from '../api-types.js';
import { OutcomeChart, OUTCOME_COLOURS } from '../components/outcome-chart.js';
import { PageHeading } from '../components/page-heading.js';
import { Problem } from '../components/problem.js';
import { formatDuration } from '../format.js';
import { usePoll } from '../use-poll.js';

/** What is happening now: outcomes per minute, load against the limits, queues, latency, channels. Live. */
export function OverviewPage() {
  const overview = usePoll(() => api<Overview>('/admin/overview'), 2000);
  const data = overview.data;
  return (
    <>
      <PageHeading>Overview</PageHeading>
      <Problem error={overview.error} />
      {data && <OverviewBody data={data} />}
    </>
  );
}

function OverviewBody({ data }: { data: Overview }) {
  const counts = Object.fromEntries(
    OUTCOMES.map((outcome) => [outcome, data.minutes.map((minute) => minute.outcomes[outcome] ?? 0)]),
  ) as Record<Outcome, number[]>;
  const totals = OUTCOMES.map(
    (outcome) => [outcome, counts[outcome].reduce((sum, n) => sum + n, 0)] as const,
  );
  const sum = totals.reduce((all, [, n]) => all + n, 0);
  return (
    <div class="grid">
      <section class="card span-all" aria-labelledby="throughput">
        <h2 id="throughput">Messages per minute, last 60 minutes</h2>
        <OutcomeChart
          data={{ minutes: data.minutes.map((minute) => minute.at), counts }}
          label={`Stacked bar chart of messages per minute by outcome: ${sum} in the last 60 minutes`}
        />
        <table class="totals">
          <caption>Messages in the last 60 minutes by outcome</caption>
          <tbody>
            <tr>
              {totals.map(([outcome, n]) => (
                <td key={outcome} data-outcome={outcome}>
                  <span class="swatch" style={{ background: OUTCOME_COLOURS[outcome] }} aria-hidden="true" />
                  {outcome} <strong>{n}</strong>
                </td>
              ))}
            </tr>
          </tbody>
        </table>
      </section>

      <section class="card" aria-labelledby="load">
        <h2 id="load">Load</h2>
        <dl class="stats">
          <div>
            <dt>Turns running</dt>
            <dd>
              {data.inflight} <small>of {data.limits.concurrency}</small>
            </dd>
          </div>
          <div>
            <dt>Active sessions</dt>
            <dd>{data.sessions}</dd>
          </div>
          <div>
            <dt>Waiting</dt>
            <dd>{data.pending}</dd>
          </div>
        </dl>
        <meter
          min={0}
          max={data.limits.concurrency}
          value={data.inflight}
          aria-label="Turns running against the concurrency limit"
        />
      </section>

      <section class="card" aria-labelledby="queues">
        <h2 id="queues">Queues</h2>
        <table>
          <thead>
            <tr>
              <th scope="col">Pipeline</th>
              <th scope="col" class="num">
                Waiting
              </th>
              <th scope="col" class="num">
                Oldest wait
              </th>
              <th scope="col" class="num">
                Limit
              </th>
            </tr>
          </thead>
          <tbody>
            {data.queues.map((queue) => (
              <tr key={queue.pipeline}>
                <th scope="row">{queue.pipeline}</th>
                <td class="num">{queue.pending}</td>
                <td class="num">
                  {queue.oldest_wait_ms === null ? '—' : formatDuration(queue.oldest_wait_ms)}
                </td>
                <td class="num">{data.limits.pipelines[queue.pipeline] ?? '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>

      <section class="card" aria-labelledby="latency">
        <h2 id="latency">Pipeline latency</h2>
        <table>
          <thead>
            <tr>
              <th scope="col">Pipeline</th>
              <th scope="col" class="num">
                p50
              </th>
              <th scope="col" class="num">
                p95
              </th>
            </tr>
          </thead>
          <tbody>
            {data.latency.map((row) => (
              <tr key={row.pipeline}>
                <th scope="row">{row.pipeline}</th>
                <td class="num">{row.p50_ms === null ? '—' : formatDuration(row.p50_ms)}</td>
                <td class="num">{row.p95_ms === null ? '—' : formatDuration(row.p95_ms)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>

      <section class="card" aria-labelledby="channels">
        <h2 id="channels">Channels</h2>
        <ul class="health">
          {data.channels.map((channel) => (
            <li key={channel.id} class={channel.ok ? 'ok' : 'bad'}>
              <span class="dot" aria-hidden="true" />
              <strong>{channel.id}</strong> ({channel.type}) {channel.ok ? 'healthy' : 'unhealthy'}
              {channel.state && `, ${channel.state}`}
              {channel.detail && <span class="hint"> — {channel.detail}</span>}
            </li>
          ))}
        </ul>
      </section>
    </div>
  );
}
