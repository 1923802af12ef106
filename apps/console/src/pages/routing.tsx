import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { forPickedTenant } from '../tenant-scope.js';
import type { Condition, RouteDryRun, Routing } from '../api-types.js';
import { PageHeading } from '../components/page-heading.js';
import { Problem } from '../components/problem.js';
import { usePoll } from '../use-poll.js';

/** The routing rules in order with their hit counts, and a dry run with the gateway's own router. */
export function RoutingPage() {
  const routing = usePoll(() => api<Routing>(forPickedTenant('/admin/routing')), 5000);
  const [result, setResult] = useState<RouteDryRun>();
  const [error, setError] = useState<Error>();

  async function dryRun(event: Event) {
    event.preventDefault();
    const form = Object.fromEntries(new FormData(event.currentTarget as HTMLFormElement)) as Record<
      string,
      string
    >;
    try {
      setResult(
        await api<RouteDryRun>('/admin/route', {
          method: 'POST',
          body: {
            channel: form.channel,
            chat_type: form.chat_type,
            chat_id: form.chat_id,
            ...(form.sender ? { sender: form.sender } : {}),
            text: form.text,
            mention: form.mention === 'on',
          },
        }),
      );
      setError(undefined);
    } catch (failure) {
      setResult(undefined);
      setError(failure as Error);
    }
  }

  const data = routing.data;
  return (
    <>
      <PageHeading>Routing</PageHeading>
      <Problem error={routing.error} />
      {data && (
        <div class="table-wrap">
          <table>
            <caption>Rules in the order they are checked; hits since the gateway started</caption>
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">Rule</th>
                <th scope="col">Conditions</th>
                <th scope="col">Pipeline</th>
                <th scope="col" class="num">
                  Hits
                </th>
              </tr>
            </thead>
            <tbody>
              {data.rules.map((rule, index) => (
                <tr key={rule.name}>
                  <td>{index + 1}</td>
                  <th scope="row">{rule.name}</th>
                  <td class="text">
                    {rule.channels && <div>channels: {rule.channels.join(', ')}</div>}
                    {conditions(rule)}
                  </td>
                  <td>{rule.pipeline}</td>
                  <td class="num">{rule.hits}</td>
                </tr>
              ))}
              <tr>
                <td />
                <th scope="row">default</th>
                <td>no rule matched</td>
                <td>{data.default.pipeline}</td>
                <td class="num">{data.default.hits}</td>
              </tr>
            </tbody>
          </table>
        </div>
      )}

      <h2 id="dry-run">Dry run</h2>
      <p class="hint">
        What would this message get? The same router as <code>switchboard route</code>; nothing is sent.
      </p>
      <form class="filters" aria-labelledby="dry-run" onSubmit={dryRun}>
        <div class="field">
          <label for="route-channel">Channel</label>
          <input id="route-channel" name="channel" required />
        </div>
        <div class="field">
          <label for="route-chat-type">Chat type</label>
          <select id="route-chat-type" name="chat_type">
            <option value="person">person</option>
            <option value="group">group</option>
          </select>
        </div>
        <div class="field">
          <label for="route-chat-id">Chat id</label>
          <input id="route-chat-id" name="chat_id" required defaultValue="dry-run" />
        </div>
        <div class="field">
          <label for="route-sender">Sender</label>
          <input id="route-sender" name="sender" />
        </div>
        <div class="field wide">
          <label for="route-text">Text</label>
          <textarea id="route-text" name="text" rows={2} required />
        </div>
        <div class="field check">
          <input id="route-mention" name="mention" type="checkbox" />
          <label for="route-mention">Mentions the bot</label>
        </div>
        <div class="actions">
          <button type="submit">Dry run</button>
        </div>
      </form>
      <Problem error={error} />
      {result && (
        <section aria-labelledby="dry-run-result" class="result" aria-live="polite">
          <h3 id="dry-run-result">Result</h3>
          <dl>
            <dt>Rule</dt>
            <dd class="rule">{result.rule ?? 'default'}</dd>
            <dt>Pipeline</dt>
            <dd>{result.pipeline}</dd>
            <dt>Result</dt>
            <dd>{result.result}</dd>
          </dl>
          <ol class="trace">
            {result.trace.map((step) => (
              <li key={step.rule} class={step.matched ? 'matched' : undefined}>
                <strong>{step.rule}</strong>: {step.why}
                {step.matched && ' ← match'}
              </li>
            ))}
          </ol>
        </section>
      )}
    </>
  );
}

/** A rule's conditions as the config states them: `message_content contains "buy now" and …`. */
function conditions(rule: Routing['rules'][number]): string {
  const all: Array<Partial<Condition>> = rule.all ?? [rule];
  return all
    .map((condition) => `${condition.type} ${condition.operator} ${JSON.stringify(condition.value)}`)
    .join(' and ');
}
