// What tracing uses of the OpenTelemetry packages, imported only when tracing starts
// (`tracing.ts`). A module of our own between the two: the gateway's bundle keeps a library's
// named exports through a static import, while a dynamic import of a CommonJS library there
// yields its default export alone.
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
