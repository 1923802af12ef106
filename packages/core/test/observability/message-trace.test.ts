import * as api from '@opentelemetry/api';
import { type Span, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { SwitchboardError, createMessageTracer } from '../../src/index.js';

/** A span that keeps what is recorded on it. */
function recordingSpan(name: string) {
  const span = {
    name,
    exceptions: [] as unknown[],
    status: undefined as unknown,
    setAttribute: () => span,
    setAttributes: () => span,
    addEvent: () => span,
    addLink: () => span,
    addLinks: () => span,
    updateName: () => span,
    recordException(exception: unknown) {
      span.exceptions.push(exception);
    },
    setStatus(status: unknown) {
      span.status = status;
      return span;
    },
    end() {},
    isRecording: () => true,
    spanContext: () => ({ traceId: `${'0'.repeat(31)}1`, spanId: `${'0'.repeat(15)}1`, traceFlags: 1 }),
  };
  return span;
}

describe('createMessageTracer', () => {
  describe('when a traced step fails with an error quoting a secret', () => {
    it('records the code and the masked message on the span, never the stack', () => {
      const spans: Array<ReturnType<typeof recordingSpan>> = [];
      const tracer = {
        startSpan: (name: string) => {
          const span = recordingSpan(name);
          spans.push(span);
          return span;
        },
      } as unknown as Tracer;
      const traced = createMessageTracer(api, tracer, (text) => text.replaceAll('123:SECRET', '[secret]'));
      const failure = new SwitchboardError('SB_CHANNEL_SEND_FAILED', {
        message: 'POST /bot123:SECRET/sendMessage refused',
      });

      expect(() =>
        traced.route(recordingSpan('receive api') as unknown as Span, () => {
          throw failure;
        }),
      ).toThrow(failure);

      const route = spans.find((span) => span.name === 'route');
      const message = 'POST /bot[secret]/sendMessage refused';
      expect(route?.exceptions).toEqual([{ name: 'SB_CHANNEL_SEND_FAILED', message }]);
      expect(route?.status).toEqual({ code: SpanStatusCode.ERROR, message });
    });
  });
});
