import * as api from '@opentelemetry/api';
import { type Span, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import {
  type InboundMessage,
  type QueuedMessage,
  SwitchboardError,
  type Turn,
  createMessageTracer,
  parseInboundMessage,
} from '../../src/index.js';

/** A span that keeps what is recorded on it. */
function recordingSpan(name: string) {
  const span = {
    name,
    exceptions: [] as unknown[],
    status: undefined as unknown,
    attributes: {} as Record<string, unknown>,
    setAttribute(key: string, value: unknown) {
      span.attributes[key] = value;
      return span;
    },
    setAttributes(attributes: Record<string, unknown>) {
      Object.assign(span.attributes, attributes);
      return span;
    },
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

/** A tracer that keeps every span it starts, with the attributes it was started with. */
function recordingTracer() {
  const spans: Array<ReturnType<typeof recordingSpan>> = [];
  const tracer = {
    startSpan: (name: string, options?: { attributes?: Record<string, unknown> }) => {
      const span = recordingSpan(name);
      Object.assign(span.attributes, options?.attributes);
      spans.push(span);
      return span;
    },
  } as unknown as Tracer;
  return { spans, tracer };
}

function inboundOf(tenant?: string): InboundMessage {
  return parseInboundMessage({
    id: '01KBQ3V8M2X7R4T9N6P1D5F0GH',
    platform: 'openapi',
    channel: 'api',
    ...(tenant === undefined ? {} : { tenant }),
    chat: { type: 'person', id: 's1' },
    sender: { id: 'u1' },
    text: 'hello',
    platform_message_id: 'm1',
    received_at: 0,
  });
}

describe('createMessageTracer', () => {
  describe('when a message of a tenant is routed and runs', () => {
    it('records its tenant on the receive, route and turn spans; `default` when it has none', () => {
      const { spans, tracer } = recordingTracer();
      const traced = createMessageTracer(api, tracer);
      for (const tenant of ['acme', undefined]) {
        const inbound = inboundOf(tenant);
        const received = traced.receive(inbound);
        traced.route(received, inbound, () => ({ pipeline: 'echo', rule: null, routedByRule: false }));
        const queued = { message: inbound, acceptedAt: 0, attempt: 1 } as QueuedMessage;
        traced.startTurn(
          { id: 't1', pipeline: 'echo', attempt: 1, messages: [queued] } as unknown as Turn,
          undefined,
          1,
        );
      }
      const tenants = (name: string) =>
        spans.filter((span) => span.name === name).map((span) => span.attributes['switchboard.tenant']);
      expect(tenants('receive api')).toEqual(['acme', 'default']);
      expect(tenants('route')).toEqual(['acme', 'default']);
      expect(tenants('turn')).toEqual(['acme', 'default']);
    });
  });

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
        traced.route(recordingSpan('receive api') as unknown as Span, inboundOf(), () => {
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
