import { describe, expect, it } from 'vitest';
import { EventStreamParser } from '../src/event-stream-parser.js';

describe('EventStreamParser', () => {
  describe('when whole events arrive', () => {
    it('returns each with its name and data, in order', () => {
      const parser = new EventStreamParser();
      expect(parser.push('event: handoff\ndata: null\n\nevent: entry\ndata: {"seq":1}\n\n')).toEqual([
        { event: 'handoff', data: 'null' },
        { event: 'entry', data: '{"seq":1}' },
      ]);
    });

    it('names an event without an event field `message`', () => {
      expect(new EventStreamParser().push('data: hi\n\n')).toEqual([{ event: 'message', data: 'hi' }]);
    });

    it('joins data lines with a line feed and drops only one space after the colon', () => {
      expect(new EventStreamParser().push('data:one\ndata:  two\ndata\n\n')).toEqual([
        { event: 'message', data: 'one\n two\n' },
      ]);
    });
  });

  describe('when the text arrives in pieces', () => {
    it('returns an event only once its blank line came, whatever the cuts', () => {
      const stream = 'event: entry\r\ndata: {"text":"a: b"}\r\n\r\n';
      for (let cut = 0; cut <= stream.length; cut++) {
        const parser = new EventStreamParser();
        const events = [...parser.push(stream.slice(0, cut)), ...parser.push(stream.slice(cut))];
        expect({ cut, events }).toEqual({ cut, events: [{ event: 'entry', data: '{"text":"a: b"}' }] });
      }
    });

    it('holds a half event back until the rest arrives', () => {
      const parser = new EventStreamParser();
      expect(parser.push('event: entry\ndata: 1')).toEqual([]);
      expect(parser.push('2\n')).toEqual([]);
      expect(parser.push('\n')).toEqual([{ event: 'entry', data: '12' }]);
    });
  });

  describe('when lines end with CR alone', () => {
    it('reads them as line ends, a CR last in a piece once the next shows it is no CRLF', () => {
      const parser = new EventStreamParser();
      expect(parser.push('event: a\rdata: x\r\r')).toEqual([]);
      expect(parser.push('data: y')).toEqual([{ event: 'a', data: 'x' }]);
    });
  });

  describe('when the stream carries comments, ids or events without data', () => {
    it('skips the comments and fields it does not read, and dispatches no empty event', () => {
      const parser = new EventStreamParser();
      expect(parser.push(': keep-alive\n\nid: 7\nretry: 1000\nevent: ping\n\ndata: x\n\n')).toEqual([
        { event: 'message', data: 'x' },
      ]);
    });
  });
});
