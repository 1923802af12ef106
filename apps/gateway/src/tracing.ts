import type { TracesConfig } from '@switchboard/config';
import { type MessageTracer, createMessageTracer, within } from '@switchboard/core';

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
  if (setting(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return undefined;
  if (setting(env, 'OTEL_TRACES_EXPORTER')?.toLowerCase() === 'none') return undefined;
  const base = setting(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  return (
    config.endpoint ??
    setting(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') ??
    (base === undefined ? undefined : `${base.replace(/\/$/, '')}/v1/traces`)
  );
}

/** A variable's value; empty counts as unset, as the OpenTelemetry specification says. */
function setting(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

/** How long the last export may take at shutdown: a collector that is down must not hold the exit. */
const SHUTDOWN_TIMEOUT_MS = 2000;

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
 * promise of the process. Resolves to undefined, and registers nothing, when tracing is off:
 * neither the SDK nor the API is then loaded.
 */
export async function startTracing(
  config: TracesConfig,
  version: string,
  env: NodeJS.ProcessEnv = process.env,
  mask: (text: string) => string = (text) => text,
): Promise<Tracing | undefined> {
  const endpoint = endpointOf(config, env);
  if (endpoint === undefined) return undefined;
  const {
    api,
    W3CTraceContextPropagator,
    OTLPTraceExporter,
    detectResources,
    envDetector,
    resourceFromAttributes,
    BatchSpanProcessor,
    ParentBasedSampler,
    TraceIdRatioBasedSampler,
    TracerProvider,
  } = await import('./opentelemetry-exports.js');
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
    // The configured ratio decides for a trace a caller began too: a client's `traceparent` may
    // not switch sampling on (the cost lever) — only off, for a parent it did not sample.
    sampler: new ParentBasedSampler({
      root: new TraceIdRatioBasedSampler(config.sampleRatio),
      remoteParentSampled: new TraceIdRatioBasedSampler(config.sampleRatio),
    }),
    spanProcessors: [new BatchSpanProcessor({ exporter, ...batchDelayOf(env) })],
  });
  const { propagation, trace } = api;
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return {
    tracer: createMessageTracer(api, provider.getTracer('switchboard', version), mask),
    async shutdown() {
      // Spans a collector that is away cannot take are lost, not worth a late exit.
      await within(
        provider.shutdown().catch(() => {}),
        SHUTDOWN_TIMEOUT_MS,
      );
      trace.disable();
      propagation.disable();
    },
  };
}
