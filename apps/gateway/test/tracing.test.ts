import { ROOT_CONTEXT, propagation, trace } from '@opentelemetry/api';
import { startFakeOtlpCollector } from '@switchboard/testkit/otlp-collector';
import { afterEach, describe, expect, it } from 'vitest';
import { startTracing } from '../src/tracing.js';

const OFF = { endpoint: undefined, sampleRatio: 1, serviceName: undefined };

describe('startTracing', () => {
  afterEach(() => {
    trace.disable();
    propagation.disable();
  });

  describe('when neither the config nor OTEL_EXPORTER_OTLP_* names a collector', () => {
    it('starts nothing: the API stays a no-op that records no span and injects no header', async () => {
      expect(await startTracing(OFF, '1.0.0', {})).toBeUndefined();

      const span = trace.getTracer('test').startSpan('probe');
      expect(span.isRecording()).toBe(false);
      const carrier: Record<string, string> = {};
      propagation.inject(trace.setSpan(ROOT_CONTEXT, span), carrier);
      expect(carrier).toEqual({});
    });
  });

  describe('when OTEL_SDK_DISABLED=true beside an endpoint', () => {
    it('starts no exporter: the collector hears nothing', async () => {
      const collector = await startFakeOtlpCollector();
      try {
        const env = { OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: collector.tracesUrl };
        expect(await startTracing(OFF, '1.0.0', env)).toBeUndefined();
        trace.getTracer('test').startSpan('probe').end();
        expect(collector.requests).toBe(0);
      } finally {
        await collector.close();
      }
    });
  });

  describe('when the standard variables are set but empty, or turn tracing off in other words', () => {
    it('leaves tracing off, as the specification reads an empty variable as unset', async () => {
      for (const env of [
        { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '' },
        { OTEL_EXPORTER_OTLP_ENDPOINT: ' ' },
        { OTEL_SDK_DISABLED: 'TRUE', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' },
        { OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' },
      ])
        expect(await startTracing(OFF, '1.0.0', env), JSON.stringify(env)).toBeUndefined();
    });
  });

  describe('when only the standard variables name the collector and the service', () => {
    it('exports the spans there under OTEL_SERVICE_NAME, flushed by shutdown', async () => {
      const collector = await startFakeOtlpCollector();
      try {
        const env = { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: collector.tracesUrl, OTEL_SERVICE_NAME: 'bots-eu' };
        const tracing = await startTracing(OFF, '1.2.3', env);
        expect(tracing).toBeDefined();
        trace.getTracer('test').startSpan('probe').end();
        await tracing?.shutdown();

        expect(collector.spans).toMatchObject([
          { name: 'probe', resource: { 'service.name': 'bots-eu', 'service.version': '1.2.3' } },
        ]);
      } finally {
        await collector.close();
      }
    });
  });
});
