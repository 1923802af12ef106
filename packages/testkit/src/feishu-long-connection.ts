import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { type WebSocket, WebSocketServer } from 'ws';
import { eventually } from './eventually.js';

/**
 * The long connection of the fake Feishu open platform ("websocket mode"): what the official
 * SDK's WSClient connects to once `POST /callback/ws/endpoint` has told it where. Frames are
 * protobuf `pbbp2.Frame`s, encoded and decoded here from the message definition:
 *
 *     message Header { required string key = 1; required string value = 2; }
 *     message Frame {
 *       required uint64 SeqID = 1; required uint64 LogID = 2;
 *       required int32 service = 3; required int32 method = 4;   // method: 0 control, 1 data
 *       repeated Header headers = 5;
 *       optional string payloadEncoding = 6; optional string payloadType = 7;
 *       optional bytes payload = 8; optional string LogIDNew = 9;
 *     }
 *
 * As Feishu, an event goes to ONE of the app's connections (round robin here), as a data frame
 * (headers `type: event`, `message_id`, `sum: 1`, `seq: 0`, `trace_id`; payload the event's
 * JSON); the client answers with the same frame, its payload `{"code":200}` when it took the
 * event. Any other code, or no answer within the ack timeout, and the event is delivered again,
 * possibly to another connection. Pings (control frames `type: ping`) get a pong carrying the
 * client config. Unlike Feishu as far as its documentation says, events go only to connections
 * whose client has sent a frame: the SDK pings at its socket's open but reads frames only a few
 * promise steps later, so a frame arriving with the handshake's answer is dropped unanswered
 * (Feishu would deliver it again after its ack timeout) — a wait the tests would pay at random.
 */

/** Header of a frame. */
export interface FrameHeader {
  key: string;
  value: string;
}

/** A `pbbp2.Frame`. */
export interface FeishuFrame {
  seqId: bigint;
  logId: bigint;
  service: number;
  /** 0: control (ping, pong), 1: data (events). */
  method: number;
  headers: FrameHeader[];
  payloadEncoding?: string;
  payloadType?: string;
  payload?: Uint8Array;
  logIdNew?: string;
}

/** Timings the platform hands the client, in seconds (`ClientConfig` of the endpoint answer and of pongs). */
export interface LongConnectionClientConfig {
  PingInterval: number;
  ReconnectCount: number;
  ReconnectInterval: number;
  ReconnectNonce: number;
}

/**
 * Feishu hands out a ping every 120 s and reconnects after 120 s (plus up to 30 s of jitter);
 * the fake reconnects within a fraction of a second so that tests need not wait.
 */
export const FAKE_CLIENT_CONFIG: LongConnectionClientConfig = {
  PingInterval: 120,
  ReconnectCount: -1,
  ReconnectInterval: 0.2,
  ReconnectNonce: 0.1,
};

/** One try of a delivery: which connection got it and what it answered (`null`: no answer in time). */
export interface SocketDeliveryAttempt {
  /** The connection's number, counted from 1 in order of connection. */
  connection: number;
  code: number | null;
}

/** What `deliverOverSocket` came to. */
export interface SocketDelivery {
  /** The last try's code: 200 when the event was taken. */
  code: number | null;
  attempts: SocketDeliveryAttempt[];
}

export interface SocketDeliveryOptions {
  /** Tries before giving up. Default: 5. */
  maxAttempts?: number;
  /** How long a try waits for the answer. Default: 3 s. */
  ackTimeoutMs?: number;
  /** The wait before another try. Default: 50 ms. */
  redeliverAfterMs?: number;
}

export interface FakeLongConnection {
  /** The `data` of the endpoint answer: where to connect and the client config. */
  endpoint(): { URL: string; ClientConfig: LongConnectionClientConfig };
  /** Connections open now. */
  connections(): number;
  /** Connections ever opened. */
  connectionsOpened(): number;
  /** Resolves once `count` connections are open (rejects after `timeoutMs`). */
  waitForConnections(count: number, timeoutMs?: number): Promise<void>;
  /** Pings received. */
  pings(): number;
  /** Every delivery made, in order. */
  deliveries: SocketDelivery[];
  /**
   * Sends `event` (an event body, e.g. `messageEvent(...)`) to one open connection whose client
   * has sent a frame, waiting for one, and again while the answer is not 200; resolves with the tries.
   */
  deliver(event: Record<string, unknown>, options?: SocketDeliveryOptions): Promise<SocketDelivery>;
  /** Closes every connection from the platform's side, as when Feishu moves them. */
  dropConnections(): void;
  /**
   * While `true`, the open connections stay open but nothing comes over them, pings go
   * unanswered: a far end gone without closing (a dead host, a NAT that forgot the connection).
   * Connections opened later answer.
   */
  silence(silent: boolean): void;
  close(): void;
}

// --- protobuf wire format (varints and length-delimited fields, all this message needs) ---

function varint(value: bigint): number[] {
  const bytes: number[] = [];
  let rest = BigInt.asUintN(64, value);
  do {
    const low = Number(rest & 0x7fn);
    rest >>= 7n;
    bytes.push(rest === 0n ? low : low | 0x80);
  } while (rest !== 0n);
  return bytes;
}

const tag = (field: number, wireType: number) => varint(BigInt((field << 3) | wireType));
const bytesField = (field: number, bytes: Uint8Array) => [
  ...tag(field, 2),
  ...varint(BigInt(bytes.length)),
  ...bytes,
];
const stringField = (field: number, text: string) => bytesField(field, new TextEncoder().encode(text));

function encodeHeader(header: FrameHeader): Uint8Array {
  return Uint8Array.from([...stringField(1, header.key), ...stringField(2, header.value)]);
}

/** A frame as protobuf bytes. */
export function encodeFrame(frame: FeishuFrame): Uint8Array {
  const bytes = [
    ...tag(1, 0),
    ...varint(frame.seqId),
    ...tag(2, 0),
    ...varint(frame.logId),
    ...tag(3, 0),
    ...varint(BigInt(frame.service)),
    ...tag(4, 0),
    ...varint(BigInt(frame.method)),
    ...frame.headers.flatMap((header) => bytesField(5, encodeHeader(header))),
    ...(frame.payloadEncoding === undefined ? [] : stringField(6, frame.payloadEncoding)),
    ...(frame.payloadType === undefined ? [] : stringField(7, frame.payloadType)),
    ...(frame.payload === undefined ? [] : bytesField(8, frame.payload)),
    ...(frame.logIdNew === undefined ? [] : stringField(9, frame.logIdNew)),
  ];
  return Uint8Array.from(bytes);
}

/** The fields of a message: field number to its varints or byte strings, in order. */
function readFields(bytes: Uint8Array): Array<{ field: number; value: bigint | Uint8Array }> {
  const fields: Array<{ field: number; value: bigint | Uint8Array }> = [];
  let at = 0;
  const readVarint = (): bigint => {
    let value = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (at >= bytes.length) throw new Error('protobuf: truncated varint');
      const byte = bytes[at++] as number;
      value |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return value;
    }
  };
  while (at < bytes.length) {
    const key = Number(readVarint());
    const field = key >> 3;
    const wireType = key & 7;
    if (wireType === 0) fields.push({ field, value: readVarint() });
    else if (wireType === 2) {
      const length = Number(readVarint());
      if (at + length > bytes.length) throw new Error('protobuf: truncated field');
      fields.push({ field, value: bytes.subarray(at, at + length) });
      at += length;
    } else if (wireType === 1) at += 8;
    else if (wireType === 5) at += 4;
    else throw new Error(`protobuf: wire type ${wireType} not supported`);
  }
  return fields;
}

const text = (value: bigint | Uint8Array) =>
  typeof value === 'bigint' ? '' : new TextDecoder().decode(value);

/** A frame from protobuf bytes; throws on bytes that are not one. */
export function decodeFrame(bytes: Uint8Array): FeishuFrame {
  const frame: FeishuFrame = { seqId: 0n, logId: 0n, service: 0, method: 0, headers: [] };
  for (const { field, value } of readFields(bytes)) {
    if (field === 1 && typeof value === 'bigint') frame.seqId = value;
    else if (field === 2 && typeof value === 'bigint') frame.logId = value;
    else if (field === 3 && typeof value === 'bigint') frame.service = Number(BigInt.asIntN(32, value));
    else if (field === 4 && typeof value === 'bigint') frame.method = Number(BigInt.asIntN(32, value));
    else if (field === 5 && typeof value !== 'bigint') {
      const header = { key: '', value: '' };
      for (const part of readFields(value)) {
        if (part.field === 1) header.key = text(part.value);
        if (part.field === 2) header.value = text(part.value);
      }
      frame.headers.push(header);
    } else if (field === 6) frame.payloadEncoding = text(value);
    else if (field === 7) frame.payloadType = text(value);
    else if (field === 8 && typeof value !== 'bigint') frame.payload = Uint8Array.from(value);
    else if (field === 9) frame.logIdNew = text(value);
  }
  return frame;
}

/** The value of a frame's header `key`. */
export const headerOf = (frame: FeishuFrame, key: string) =>
  frame.headers.find((header) => header.key === key)?.value;

const SERVICE_ID = 7;

/**
 * Serves the long connection on `server` (upgrades of `/ws`); `baseUrl` is the server's http URL.
 * `clientConfig` replaces the timings handed to clients.
 */
export function serveLongConnection(
  server: Server,
  baseUrl: string,
  clientConfig: LongConnectionClientConfig = FAKE_CLIENT_CONFIG,
): FakeLongConnection {
  const wss = new WebSocketServer({ noServer: true });
  const open: Array<{ number: number; ws: WebSocket }> = [];
  const silenced = new Set<WebSocket>();
  /** Connections whose client has sent a frame, so reads them. */
  const spoken = new WeakSet<WebSocket>();
  /** Answers awaited, by the `message_id` header of the data frame sent. */
  const waiting = new Map<string, (code: number | null) => void>();
  const deliveries: SocketDelivery[] = [];
  let opened = 0;
  let pings = 0;
  let next = 0;
  let seq = 0n;

  function onFrame(ws: WebSocket, frame: FeishuFrame) {
    const type = headerOf(frame, 'type');
    spoken.add(ws);
    if (silenced.has(ws)) return;
    if (frame.method === 0 && type === 'ping') {
      pings += 1;
      const pong: FeishuFrame = {
        ...frame,
        headers: [{ key: 'type', value: 'pong' }],
        payload: new TextEncoder().encode(JSON.stringify(clientConfig)),
      };
      ws.send(encodeFrame(pong));
      return;
    }
    if (frame.method !== 1) return;
    const answered = waiting.get(headerOf(frame, 'message_id') ?? '');
    if (answered === undefined) return;
    let code: number | null = null;
    try {
      const payload = JSON.parse(new TextDecoder().decode(frame.payload ?? new Uint8Array())) as {
        code?: unknown;
      };
      code = typeof payload.code === 'number' ? payload.code : null;
    } catch {}
    answered(code);
  }

  server.on('upgrade', (request, socket, head) => {
    if (request.url?.split('?')[0] !== '/ws') {
      socket.destroy();
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      opened += 1;
      const connection = { number: opened, ws };
      open.push(connection);
      ws.on('close', () => open.splice(open.indexOf(connection), 1));
      ws.on('message', (data: Buffer) => {
        try {
          onFrame(ws, decodeFrame(new Uint8Array(data)));
        } catch {
          // Not a frame: Feishu would drop the connection.
          ws.terminate();
        }
      });
    });
  });

  /** One try: a data frame to the next open connection, and its answer. */
  async function attempt(
    event: Record<string, unknown>,
    ackTimeoutMs: number,
  ): Promise<SocketDeliveryAttempt> {
    // A connection the client is closing is not one Feishu would pick.
    const usable = () =>
      open.filter(({ ws }) => ws.readyState === ws.OPEN && spoken.has(ws) && !silenced.has(ws));
    await eventually(() => usable().length > 0, 5_000, 'a long connection open whose client sent a frame');
    const candidates = usable();
    const connection = candidates[next++ % candidates.length] as { number: number; ws: WebSocket };
    const messageId = randomUUID();
    seq += 1n;
    const frame: FeishuFrame = {
      seqId: seq,
      logId: seq,
      service: SERVICE_ID,
      method: 1,
      headers: [
        { key: 'type', value: 'event' },
        { key: 'message_id', value: messageId },
        { key: 'sum', value: '1' },
        { key: 'seq', value: '0' },
        { key: 'trace_id', value: randomUUID() },
      ],
      payload: new TextEncoder().encode(JSON.stringify(event)),
    };
    const code = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => resolve(null), ackTimeoutMs);
      waiting.set(messageId, (answer) => {
        clearTimeout(timer);
        resolve(answer);
      });
      connection.ws.send(encodeFrame(frame));
    });
    waiting.delete(messageId);
    return { connection: connection.number, code };
  }

  return {
    endpoint: () => ({
      URL: `${baseUrl.replace(/^http/, 'ws')}/ws?device_id=${randomUUID()}&service_id=${SERVICE_ID}`,
      ClientConfig: clientConfig,
    }),
    connections: () => open.length,
    connectionsOpened: () => opened,
    waitForConnections: async (count, timeoutMs = 5_000) => {
      await eventually(() => open.length >= count, timeoutMs, `${count} long connections open`);
    },
    pings: () => pings,
    deliveries,
    async deliver(event, options = {}) {
      const delivery: SocketDelivery = { code: null, attempts: [] };
      deliveries.push(delivery);
      for (let tries = 0; tries < (options.maxAttempts ?? 5); tries += 1) {
        if (tries > 0) await new Promise((resolve) => setTimeout(resolve, options.redeliverAfterMs ?? 50));
        const tried = await attempt(event, options.ackTimeoutMs ?? 3_000);
        delivery.attempts.push(tried);
        delivery.code = tried.code;
        if (tried.code === 200) break;
      }
      return delivery;
    },
    dropConnections() {
      for (const { ws } of [...open]) ws.terminate();
    },
    silence(silent) {
      silenced.clear();
      if (silent) for (const { ws } of open) silenced.add(ws);
    },
    close() {
      for (const { ws } of [...open]) ws.terminate();
      wss.close();
    },
  };
}
