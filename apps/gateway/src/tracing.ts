import { propagation, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { TracesConfig } from '@switchboard/config';
import { type MessageTracer, createMessageTracer } from '@switchboard/core';

/** `service.name` when neither `telemetry.traces.service_name` nor `OTEL_SERVICE_NAME` names one. */
const DEFAULT_SERVICE_NAME = 'switchboard';

/** Tracing as the app runs it: the tracer the engine uses, and the exporter's end. */
export interface Tracing {
  tracer: MessageTracer;
  /** Exports the spans still buffered, then stops the exporter. */
  shutdown(): Promise<void>;
}

/**
 * The collector's traces URL: the config's, else the standard variables' (as the specification
 * says, `/v1/traces` is appended to `OTEL_EXPORTER_OTLP_ENDPOINT` only); undefined leaves tracing off.
 */
function endpointOf(config: TracesConfig, env: NodeJS.ProcessEnv): string | undefined {
  if (env.OTEL_SDK_DISABLED === 'true') return undefined;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  return (
    config.endpoint ??
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    (base === undefined ? undefined : `${base.replace(/\/$/, '')}/v1/traces`)
  );
}

/**
 * `OTEL_BSP_SCHEDULE_DELAY` (ms between exports; default 5 s), which this SDK's processor does
 * not read by itself.
 */
function batchDelayOf(env: NodeJS.ProcessEnv): { scheduledDelayMillis?: number } {
  const delayMs = Number(env.OTEL_BSP_SCHEDULE_DELAY);
  return env.OTEL_BSP_SCHEDULE_DELAY !== undefined && Number.isFinite(delayMs) && delayMs >= 0
    ? { scheduledDelayMillis: delayMs }
    : {};
}

/**
 * Starts the OpenTelemetry SDK when a collector is configured (docs/design.md §2 "Tracing"):
 * a tracer provider with an OTLP/HTTP exporter behind a batching processor and W3C trace context
 * propagation, registered globally so that the packages' `@opentelemetry/api` calls reach them.
 * No context manager: the engine passes parents explicitly, and AsyncLocalStorage would tax every
 * promise of the process. Returns undefined, and registers nothing, when
 * tracing is off: the API then stays the no-op it is by default.
 */
export function startTracing(
  config: TracesConfig,
  version: string,
  env: NodeJS.ProcessEnv = process.env,
): Tracing | undefined {
  const endpoint = endpointOf(config, env);
  if (endpoint === undefined) return undefined;
  const resource = detectResources({ detectors: [envDetector] }).merge(
    resourceFromAttributes({
      'service.name': config.serviceName ?? env.OTEL_SERVICE_NAME ?? DEFAULT_SERVICE_NAME,
      'service.version': version,
    }),
  );
  // The exporter reads the other OTEL_EXPORTER_OTLP_* variables (headers, timeout) itself.
  const exporter = new OTLPTraceExporter({ url: endpoint });
  const provider = new TracerProvider({
    resource,
    // A continued trace keeps its caller's decision; a new one is sampled at the configured ratio.
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.sampleRatio) }),
    spanProcessors: [new BatchSpanProcessor({ exporter, ...batchDelayOf(env) })],
  });
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return {
    tracer: createMessageTracer(provider.getTracer('switchboard', version)),
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      propagation.disable();
    },
  };
}
