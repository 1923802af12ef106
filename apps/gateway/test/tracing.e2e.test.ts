import { type CollectedSpan, startFakeOtlpCollector } from '@switchboard/testkit/otlp-collector';
import { describe, expect, it } from 'vitest';
import { startFakePipeline } from './fake-pipeline.js';
import {
  eventually,
  get,
  post,
  serveYaml,
  startServe,
  tempDir,
  testConfig,
  useCleanups,
  writeConfig,
} from './serve-process.js';

const addCleanup = useCleanups();

/** The caller's trace that message A continues (W3C example ids). */
const CALLER_TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN_ID = '00f067aa0ba902b7';

/** The environment without any OTEL_* variable of the developer's shell. */
function envWithoutOtel(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('OTEL_')));
  return { ...env, ...extra };
}

function only(spans: CollectedSpan[], name: string): CollectedSpan {
  const found = spans.filter((span) => span.name === name);
  expect(found, `one "${name}" span`).toHaveLength(1);
  return found[0] as CollectedSpan;
}

/**
 * Slack for comparing span times: turn and wait spans are timed in whole ms (the pool's clock),
 * and the SDK anchors each span's clock on its own, so sequential spans may overlap by a fraction
 * of a millisecond.
 */
const MS_NS = 1_000_000n;

/** `inner` runs within `outer`, to within `MS_NS`. */
function expectWithin(inner: CollectedSpan, outer: CollectedSpan): void {
  expect(inner.startNs + MS_NS >= outer.startNs, `${inner.name} starts within ${outer.name}`).toBe(true);
  expect(inner.endNs <= outer.endNs + MS_NS, `${inner.name} ends within ${outer.name}`).toBe(true);
}

/** `first` ends before `second` starts, to within `MS_NS`. */
function expectBefore(first: CollectedSpan, second: CollectedSpan): void {
  expect(first.endNs <= second.startNs + MS_NS, `${first.name} ends before ${second.name} starts`).toBe(true);
}

describe('tracing', () => {
  describe('when a collector is configured and a message is routed, merged, retried once and answered', () => {
    it('exports one trace per message with its spans nested, and the backend and logs share it', {
      timeout: 60_000,
    }, async () => {
      const collector = await startFakeOtlpCollector();
      addCleanup(() => collector.close());
      const backend = await startFakePipeline();
      addCleanup(() => backend.close());
      let calls = 0;
      backend.respond = async (request) => {
        calls += 1;
        return calls === 1
          ? { status: 503, body: { error: 'busy' } }
          : { status: 200, body: { replies: [{ text: `echo: ${request.text}` }] } };
      };
      const gateway = await serveYaml(
        `telemetry: { traces: { endpoint: "${collector.tracesUrl}" } }
pipelines:
  - { id: echo, type: echo }
  - id: bot
    type: http
    url: "${backend.url}"
    aggregation: { enabled: true, delay: 1s }
    retry: { max_attempts: 3, base_delay: 200ms, max_delay: 1s }
routing:
  default: echo
  rules:
    - { name: to-bot, type: message_content, operator: contains, value: "hello", pipeline: bot }
`,
        { cleanup: addCleanup, env: envWithoutOtel({ OTEL_BSP_SCHEDULE_DELAY: '100' }) },
      );

      const first = await post(
        `${gateway.url}/v1/messages`,
        { session_id: 's1', user_id: 'u1', text: 'hello one', wait: false },
        { traceparent: `00-${CALLER_TRACE_ID}-${CALLER_SPAN_ID}-01` },
      );
      const second = await post(`${gateway.url}/v1/messages`, {
        session_id: 's1',
        user_id: 'u1',
        text: 'hello two',
        wait: false,
      });
      expect([first.status, second.status]).toEqual([202, 202]);
      const [a, b] = [first.body?.id as string, second.body?.id as string];
      const statusA = await eventually(async () => {
        const answer = await get(`${gateway.url}/v1/messages/${a}`);
        return answer.body?.status === 'completed' ? answer.body : undefined;
      }, 20_000);
      const statusB = (await get(`${gateway.url}/v1/messages/${b}`)).body;

      // The HTTP channel continued the caller's trace; B started its own.
      const traceA = CALLER_TRACE_ID;
      expect(first.body?.trace_id).toBe(traceA);
      expect(statusA).toMatchObject({ trace_id: traceA, replies: [{ text: 'echo: hello one\nhello two' }] });
      const traceB = statusB?.trace_id as string;
      expect(traceB).toMatch(/^[0-9a-f]{32}$/);
      expect(traceB).not.toBe(traceA);

      // Every span of A's story has been exported: batches may split it anywhere.
      const spansA = await eventually(() => {
        const spans = collector.spans.filter((span) => span.traceId === traceA);
        const count = (name: string) => spans.filter((span) => span.name === name).length;
        const complete =
          count('deliver api') === 1 &&
          count('turn') === 2 &&
          count('pipeline bot') === 2 &&
          count('route') === 1;
        return complete ? spans : undefined;
      }, 10_000);
      const spansB = await eventually(() => {
        const spans = collector.spans.filter((span) => span.traceId === traceB);
        return spans.filter((span) => span.name === 'queue wait').length === 2 ? spans : undefined;
      }, 10_000);

      // Message A: receive → route, its waits, two turns (attempts 1 and 2) → pipeline call, delivery.
      const receive = only(spansA, 'receive api');
      expect(receive.parentSpanId).toBe(CALLER_SPAN_ID);
      expect(receive.resource['service.name']).toBe('switchboard');
      const route = only(spansA, 'route');
      expect(route.parentSpanId).toBe(receive.spanId);
      expect(route.attributes).toMatchObject({
        'switchboard.rule': 'to-bot',
        'switchboard.pipeline': 'bot',
        'switchboard.tenant': 'default',
      });
      expectWithin(route, receive);

      const turns = spansA
        .filter((span) => span.name === 'turn')
        .sort(
          (x, y) => Number(x.attributes['switchboard.attempt']) - Number(y.attributes['switchboard.attempt']),
        );
      expect(turns.map((turn) => turn.attributes['switchboard.attempt'])).toEqual([1, 2]);
      const [turn1, turn2] = turns as [CollectedSpan, CollectedSpan];
      for (const turn of turns) {
        expect(turn.parentSpanId).toBe(receive.spanId);
        expect(turn.attributes).toMatchObject({ 'switchboard.pipeline': 'bot', 'switchboard.messages': 2 });
      }
      expectBefore(turn1, turn2);

      const pipelineCalls = spansA.filter((span) => span.name === 'pipeline bot');
      expect(pipelineCalls).toHaveLength(2);
      const [call1, call2] = turns.map((turn) =>
        pipelineCalls.find((call) => call.parentSpanId === turn.spanId),
      );
      expect(call1).toBeDefined();
      expect(call2).toBeDefined();
      expectWithin(call1 as CollectedSpan, turn1);
      expectWithin(call2 as CollectedSpan, turn2);
      expect(call1?.statusCode).toBe(2); // the 503
      const deliver = only(spansA, 'deliver api');
      expect(deliver.parentSpanId).toBe(turn2.spanId);
      expectWithin(deliver, turn2);
      expectBefore(call2 as CollectedSpan, deliver);

      // A's waits: debounce, then the queue until the first claim; then the backoff's queue wait.
      const debounce = only(spansA, 'debounce wait');
      const queueWaits = spansA
        .filter((span) => span.name === 'queue wait')
        .sort((x, y) => Number(x.startNs - y.startNs));
      expect(queueWaits).toHaveLength(2);
      for (const wait of [debounce, ...queueWaits]) expect(wait.parentSpanId).toBe(receive.spanId);
      expect(debounce.startNs + MS_NS >= receive.startNs).toBe(true);
      expect(debounce.endNs - debounce.startNs >= 900n * MS_NS).toBe(true);
      expectBefore(debounce, queueWaits[0] as CollectedSpan);
      expectBefore(queueWaits[0] as CollectedSpan, turn1);
      expectBefore(turn1, queueWaits[1] as CollectedSpan);
      expectBefore(queueWaits[1] as CollectedSpan, turn2);

      // Message B, merged into A's turns: its own receive, route and waits, linked to both turns;
      // the turns link back to it.
      const receiveB = only(spansB, 'receive api');
      expect(receiveB.parentSpanId).toBeUndefined();
      expect(only(spansB, 'route').parentSpanId).toBe(receiveB.spanId);
      expect(only(spansB, 'debounce wait').parentSpanId).toBe(receiveB.spanId);
      expect(spansB.some((span) => span.name === 'turn')).toBe(false);
      const linkedTurns = spansB
        .filter((span) => span.name === 'queue wait')
        .flatMap((span) => span.links.map((link) => link.spanId));
      expect(linkedTurns.sort()).toEqual([turn1.spanId, turn2.spanId].sort());
      for (const turn of turns)
        expect(turn.links).toContainEqual({ traceId: traceB, spanId: receiveB.spanId });

      // The backend saw each attempt's pipeline span as its parent.
      expect(backend.headers.map((headers) => headers.traceparent)).toEqual([
        `00-${traceA}-${call1?.spanId}-01`,
        `00-${traceA}-${call2?.spanId}-01`,
      ]);

      // The turn's log lines name the trace.
      const retried = gateway.logs.find((line) => line.msg === 'turn failed, retrying');
      expect(retried).toMatchObject({ trace_id: traceA, span_id: turn1.spanId });

      // A malformed traceparent is ignored, not refused: the message starts a trace of its own.
      const garbled = await post(
        `${gateway.url}/v1/messages`,
        { session_id: 's9', user_id: 'u1', text: 'plain' },
        { traceparent: `00-${CALLER_TRACE_ID}-not-a-span` },
      );
      expect(garbled.body).toMatchObject({ status: 'completed', replies: [{ text: 'plain' }] });
      expect(garbled.body?.trace_id).toMatch(/^[0-9a-f]{32}$/);
      expect(garbled.body?.trace_id).not.toBe(CALLER_TRACE_ID);
    });
  });

  describe('when the process dies while the turn runs and the message runs again after a restart', () => {
    it('joins the message trace begun before the crash', { timeout: 60_000 }, async () => {
      const collector = await startFakeOtlpCollector();
      addCleanup(() => collector.close());
      const backend = await startFakePipeline();
      addCleanup(() => backend.close());
      let calls = 0;
      backend.respond = (request) => {
        calls += 1;
        // The first attempt never answers: the gateway is killed while it waits.
        if (calls === 1) return new Promise(() => {});
        return Promise.resolve({ status: 200, body: { replies: [{ text: `echo: ${request.text}` }] } });
      };
      const dir = tempDir();
      const configPath = writeConfig(
        dir,
        testConfig(
          dir,
          `telemetry: { traces: { endpoint: "${collector.tracesUrl}" } }
pipelines: [{ id: bot, type: http, url: "${backend.url}" }]
routing: { default: bot }
`,
        ),
      );
      const env = envWithoutOtel({ OTEL_BSP_SCHEDULE_DELAY: '100' });
      const first = await startServe({ dir, configPath, env });
      const accepted = await post(`${first.url}/v1/messages`, {
        session_id: 's1',
        user_id: 'u1',
        text: 'hello',
        wait: false,
      });
      const traceId = accepted.body?.trace_id as string;
      const receive = await eventually(
        () => collector.spans.find((span) => span.traceId === traceId && span.name === 'receive api'),
        10_000,
      );
      await eventually(() => calls === 1 || undefined, 10_000);
      await first.stop('SIGKILL');

      const second = await startServe({ dir, configPath, env });
      addCleanup(() => second.stop());
      const status = await eventually(async () => {
        const answer = await get(`${second.url}/v1/messages/${accepted.body?.id}`);
        return answer.body?.status === 'completed' ? answer.body : undefined;
      }, 20_000);
      const turn = await eventually(
        () => collector.spans.find((span) => span.traceId === traceId && span.name === 'turn'),
        10_000,
      );

      expect(status.trace_id).toBe(traceId);
      expect(turn.parentSpanId).toBe(receive.spanId);
      expect(turn.attributes['switchboard.attempt']).toBe(2);
      expect(backend.headers[1]?.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    });
  });

  describe('when no collector is configured', () => {
    it('creates no span: no trace id, no traceparent to the backend, none in the logs', {
      timeout: 30_000,
    }, async () => {
      const backend = await startFakePipeline();
      addCleanup(() => backend.close());
      const gateway = await serveYaml(
        `pipelines: [{ id: bot, type: http, url: "${backend.url}" }]
routing: { default: bot }
`,
        { cleanup: addCleanup, env: envWithoutOtel() },
      );

      const answer = await post(
        `${gateway.url}/v1/messages`,
        { session_id: 's1', user_id: 'u1', text: 'hello' },
        { traceparent: `00-${CALLER_TRACE_ID}-${CALLER_SPAN_ID}-01` },
      );

      expect(answer.body).toMatchObject({ status: 'completed', trace_id: null });
      expect((await get(`${gateway.url}/v1/messages/${answer.body?.id}`)).body?.trace_id).toBeNull();
      expect(backend.headers).toHaveLength(1);
      expect(backend.headers[0]?.traceparent).toBeUndefined();
      expect(gateway.logs.filter((line) => 'trace_id' in line)).toEqual([]);
    });
  });
});
