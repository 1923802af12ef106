import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { createMemoryHandoffStore, silentLogger } from '@switchboard/core';
import { afterEach, describe, expect, it } from 'vitest';
import { createHandoffEventStreams } from '../../src/http/handoff-event-stream.js';

/** A response that keeps what is written and can be closed by its reader. */
function fakeResponse() {
  const emitter = new EventEmitter();
  const response = Object.assign(emitter, {
    ended: false,
    written: [] as unknown[],
    writableLength: 0,
    writeHead: () => response,
    write: (chunk: unknown) => response.written.push(chunk) > 0,
    end: () => {
      response.ended = true;
    },
  });
  return response;
}

describe('handoff event streams', () => {
  const streams = createHandoffEventStreams(
    createMemoryHandoffStore(),
    { maxStreams: 4, pollMs: 60_000, maxBufferedBytes: 1_000_000 },
    silentLogger,
  );
  afterEach(() => streams.closeAll());
  const open = (tenant: string | null) => {
    const response = fakeResponse();
    streams.open('s', 0, response as unknown as ServerResponse, () => true, tenant);
    return response;
  };

  describe('when one tenant opens streams', () => {
    it('lets it hold half of them, leaving the rest to other tenants and the global token', () => {
      const first = open('acme');
      open('acme');
      expect(() => open('acme')).toThrow(/2 conversation streams of tenant acme/);
      open('bravo');
      open(null);
      expect(() => open(null)).toThrow(/4 conversation streams are open/);
      // A stream acme closes gives acme its place back.
      first.emit('close');
      expect(first.ended).toBe(true);
      expect(() => open('acme')).not.toThrow();
    });
  });

  describe('when the caller may no longer read the session', () => {
    it('ends the stream on the first read, asked with the handoff found, before sending any of it', async () => {
      const response = fakeResponse();
      const asked: unknown[] = [];
      const ended = new Promise<void>((resolve) => {
        response.end = () => {
          response.ended = true;
          resolve();
        };
      });
      streams.open(
        's',
        0,
        response as unknown as ServerResponse,
        (handoff) => asked.push(handoff) < 0,
        'acme',
      );
      await ended;
      expect(asked).toEqual([null]);
      expect(response.written.filter((chunk) => String(chunk).startsWith('event:'))).toEqual([]);
    });
  });
});
