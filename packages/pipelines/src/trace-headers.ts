import { context, propagation } from '@opentelemetry/api';

/**
 * The active trace context as W3C headers (`traceparent`, `tracestate`), so that a backend's own
 * spans join the message's trace; empty when tracing is off (no propagator is registered).
 */
export function traceHeaders(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}
