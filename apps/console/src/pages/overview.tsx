import { api } from '../api.js';
import { forPickedTenant } from '../tenant-scope.js';
import { OUTCOMES, type Outcome, type Overview } from '../api-types.js';
import { OutcomeChart, OUTCOME_COLOURS } from '../components/outcome-chart.js';
import { PageHeading } from '../components/page-heading.js';
import { Problem } from '../components/problem.js';
import { formatDuration } from '../format.js';
import { usePoll } from '../use-poll.js';

/** What is happening now: outcomes per minute, load against the limits, queues, latency, channels. Live. */
export function OverviewPage() {
  const overview = usePoll(() => api<Overview>(forPickedTenant('/admin/overview')), 2000);
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
  const minutes = data.messages_per_minute;
  const counts = Object.fromEntries(
    OUTCOMES.map((outcome) => [outcome, minutes.map((minute) => minute.counts[outcome] ?? 0)]),
  ) as Record<Outcome, number[]>;
  const total = OUTCOMES.reduce((sum, outcome) => sum + (data.last_hour[outcome] ?? 0), 0);
  const { load } = data;
  const pipelines = Object.entries(data.pipelines);
  return (
    <div class="grid">
      <section class="card span-all" aria-labelledby="throughput">
        <h2 id="throughput">Messages per minute, last 60 minutes</h2>
        <OutcomeChart
          data={{ minutes: minutes.map((minute) => minute.at), counts }}
          label={`Stacked bar chart of messages per minute by outcome: ${total} in the last 60 minutes`}
        />
        <ul class="totals" aria-label="Messages in the last 60 minutes by outcome">
          {OUTCOMES.map((outcome) => (
            <li key={outcome} data-outcome={outcome}>
              <span class="swatch" style={{ background: OUTCOME_COLOURS[outcome] }} aria-hidden="true" />
              {outcome} <strong>{data.last_hour[outcome] ?? 0}</strong>
            </li>
          ))}
        </ul>
      </section>

      <section class="card" aria-labelledby="load">
        <h2 id="load">Load</h2>
        <dl class="stats">
          <div>
            <dt>Turns running</dt>
            <dd>
              {load.inflight_turns} <small>of {load.limits.concurrency_pipeline}</small>
            </dd>
          </div>
          <div>
            <dt>Active sessions</dt>
            <dd>{load.active_sessions ?? '—'}</dd>
          </div>
          <div>
            <dt>Waiting</dt>
            <dd>
              {load.pending} <small>of {load.limits.max_pending}</small>
            </dd>
          </div>
        </dl>
        <label class="meter">
          Turns running against the concurrency limit
          <meter min={0} max={load.limits.concurrency_pipeline} value={load.inflight_turns} />
        </label>
        <label class="meter">
          Messages waiting against the queue limit
          <meter min={0} max={load.limits.max_pending} value={load.pending} />
        </label>
        <p class="hint">Each session runs at most {load.limits.concurrency_session} turn(s) at once.</p>
      </section>

      <section class="card" aria-labelledby="pipelines">
        <h2 id="pipelines">Pipelines</h2>
        {/* Five columns: on a phone the table scrolls in its own box, not the page. */}
        <div class="table-wrap">
          <table>
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
                <th scope="col" class="num">
                  p50
                </th>
                <th scope="col" class="num">
                  p95
                </th>
              </tr>
            </thead>
            <tbody>
              {pipelines.map(([id, pipeline]) => (
                <tr key={id}>
                  <th scope="row">{id}</th>
                  <td class="num">{pipeline.inflight}</td>
                  <td class="num">{pipeline.pending}</td>
                  <td class="num">{duration(pipeline.pending === 0 ? null : pipeline.oldest_wait_ms)}</td>
                  <td class="num">{duration(pipeline.p50_ms)}</td>
                  <td class="num">{duration(pipeline.p95_ms)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>

      <section class="card" aria-labelledby="channels">
        <h2 id="channels">Channels</h2>
        <ul class="health">
          {data.channels.map((channel) => (
            <li key={channel.id} class={channel.ready ? 'ok' : 'bad'}>
              <span class="dot" aria-hidden="true" />
              <strong>{channel.id}</strong> {channel.ready ? 'ready' : 'not ready'}
              {channel.state && `, ${channel.state}`}
              {channel.detail && <span class="hint"> — {channel.detail}</span>}
            </li>
          ))}
        </ul>
      </section>
    </div>
  );
}

function duration(ms: number | null): string {
  return ms === null ? '—' : formatDuration(ms);
}
