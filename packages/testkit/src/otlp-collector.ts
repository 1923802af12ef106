import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake OpenTelemetry collector for tests: a node:http server on 127.0.0.1 that accepts
 * OTLP/HTTP JSON trace exports (`POST /v1/traces`, `content-type: application/json`, the
 * encoding of `@opentelemetry/exporter-trace-otlp-http`) and keeps every span, flattened. Other
 * paths answer 404 and other encodings (protobuf) 415, so a test cannot mistake a misconfigured
 * exporter for a quiet one. Point the exporter at `tracesUrl`.
 */

/** An OTLP `AnyValue`, as JSON carries it. */
interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes?: Array<{ key: string; value: OtlpValue }>;
  links?: Array<{ traceId: string; spanId: string }>;
  status?: { code?: number; message?: string };
}

interface OtlpExport {
  resourceSpans?: Array<{
    resource?: { attributes?: Array<{ key: string; value: OtlpValue }> };
    scopeSpans?: Array<{ spans?: OtlpSpan[] }>;
  }>;
}

/** One exported span, its ids in hex and its times in ns since the epoch. */
export interface CollectedSpan {
  traceId: string;
  spanId: string;
  /** Undefined on a root span. */
  parentSpanId: string | undefined;
  name: string;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, string | number | boolean>;
  links: Array<{ traceId: string; spanId: string }>;
  /** 2 = error (OTLP `STATUS_CODE_ERROR`), 0 or undefined otherwise. */
  statusCode: number | undefined;
  /** The exporting process's resource, e.g. `service.name`. */
  resource: Record<string, string | number | boolean>;
}

export interface FakeOtlpCollector {
  /** `http://127.0.0.1:<port>/v1/traces`. */
  tracesUrl: string;
  /** Every span received so far, in arrival order. */
  spans: CollectedSpan[];
  /** How many export requests arrived, whatever their content. */
  readonly requests: number;
  close(): Promise<void>;
}

function plainValue(value: OtlpValue): string | number | boolean {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  return value.boolValue ?? '';
}

function attributesOf(list: Array<{ key: string; value: OtlpValue }> | undefined) {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, plainValue(value)]));
}

function collect(body: OtlpExport, into: CollectedSpan[]): void {
  for (const resourceSpans of body.resourceSpans ?? []) {
    const resource = attributesOf(resourceSpans.resource?.attributes);
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans ?? []) {
        into.push({
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId:
            span.parentSpanId === undefined || span.parentSpanId === '' ? undefined : span.parentSpanId,
          name: span.name,
          startNs: BigInt(span.startTimeUnixNano),
          endNs: BigInt(span.endTimeUnixNano),
          attributes: attributesOf(span.attributes),
          links: (span.links ?? []).map(({ traceId, spanId }) => ({ traceId, spanId })),
          statusCode: span.status?.code,
          resource,
        });
      }
    }
  }
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => {
      text += chunk;
    });
    request.on('end', () => resolve(text));
    request.on('error', reject);
  });
}

/** Starts a fake collector on a free loopback port. */
export async function startFakeOtlpCollector(): Promise<FakeOtlpCollector> {
  const spans: CollectedSpan[] = [];
  let requests = 0;

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    requests += 1;
    const text = await readBody(request);
    if (request.method !== 'POST' || request.url !== '/v1/traces') {
      response.writeHead(404).end();
      return;
    }
    if (!(request.headers['content-type'] ?? '').startsWith('application/json')) {
      response.writeHead(415).end();
      return;
    }
    collect(JSON.parse(text) as OtlpExport, spans);
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  }

  const server: Server = createServer((request, response) => {
    handle(request, response).catch(() => response.writeHead(400).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    tracesUrl: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    get requests() {
      return requests;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
