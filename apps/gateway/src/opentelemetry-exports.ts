// The OpenTelemetry packages as tracing uses them, imported only when tracing starts
// (`tracing.ts`); why a module of our own between the two: docs/design.md §9.
export * as api from '@opentelemetry/api';
export { W3CTraceContextPropagator } from '@opentelemetry/core';
export { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
export { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
export {
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
