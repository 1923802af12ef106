import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { describe, expect, it } from 'vitest';
import { parseInboundMessage, sessionAddressOf, sessionKeyOf } from '../../src/index.js';

const inThread = (chatId: string, thread?: string) =>
  inboundMessage({
    platform: 'slack',
    channel: 'sl',
    chat: { type: 'group', id: chatId, ...(thread === undefined ? {} : { thread }) },
  });

describe('sessionKeyOf', () => {
  describe('when the channel scopes sessions by chat (the default)', () => {
    it('puts a thread in the session of its chat', () => {
      expect(sessionKeyOf(inThread('C1', '1700.1'))).toBe('slack:sl:group:C1');
      expect(sessionKeyOf(inThread('C1', '1700.1'))).toBe(sessionKeyOf(inThread('C1')));
    });
  });

  describe('when the channel scopes sessions by thread', () => {
    it('makes each thread a session of its own, and the chat outside threads another', () => {
      expect(sessionKeyOf(inThread('C1', '1700.1'), 'thread')).toBe('slack:sl:group:C1:1700.1');
      expect(sessionKeyOf(inThread('C1', '1700.2'), 'thread')).not.toBe(
        sessionKeyOf(inThread('C1', '1700.1'), 'thread'),
      );
      expect(sessionKeyOf(inThread('C1'), 'thread')).toBe('slack:sl:group:C1');
    });
  });

  describe('when an id contains the separator', () => {
    it('encodes it, so that two different chats never share a key', () => {
      expect(sessionKeyOf(inThread('a:b'), 'thread')).not.toBe(sessionKeyOf(inThread('a', 'b'), 'thread'));
    });
  });

  describe('when an id holds any other character', () => {
    it('encodes each as encodeURIComponent does, whether or not the rest of the id needs encoding', () => {
      for (let code = 1; code < 0x250; code++) {
        const char = String.fromCharCode(code);
        expect(sessionKeyOf(inThread(`C${char}1`))).toBe(`slack:sl:group:${encodeURIComponent(`C${char}1`)}`);
        expect(sessionKeyOf(inThread(`é${char}`))).toBe(`slack:sl:group:${encodeURIComponent(`é${char}`)}`);
      }
    });
  });

  describe('when an id holds an unpaired UTF-16 surrogate', () => {
    it('still gives a key, distinct from the replacement character and from other surrogates', () => {
      const keys = ['\ud800', '\udc00', '\ufffd', 'a\ud800b', '\ud83d\ude00'].map((id) =>
        sessionKeyOf(inThread(id, '\ud800'), 'thread'),
      );
      expect(keys[0]).toBe('slack:sl:group:%uD800:%uD800');
      expect(keys[3]).toBe('slack:sl:group:a%uD800b:%uD800');
      expect(new Set(keys).size).toBe(keys.length);
    });
  });
});

describe('sessionAddressOf', () => {
  it('reads back what sessionKeyOf wrote, thread and odd characters included', () => {
    const message = parseInboundMessage({
      id: 'm1',
      platform: 'slack',
      channel: 'sl:1',
      chat: { type: 'group', id: 'C/1 x', thread: '17.5' },
      sender: { id: 'u' },
      text: 'hi',
      platform_message_id: 'p',
      received_at: 1,
    });
    expect(sessionAddressOf(sessionKeyOf(message, 'thread'))).toEqual({
      platform: 'slack',
      channel: 'sl:1',
      chat: { type: 'group', id: 'C/1 x', thread: '17.5' },
    });
  });

  it('refuses what is no key, and a key written otherwise than its messages would be', () => {
    expect(() => sessionAddressOf('nope')).toThrow(/is not a session key: 1 parts/);
    expect(() => sessionAddressOf('telegram:tg:room:42')).toThrow(/chat type "room"/);
    expect(() => sessionAddressOf('telegram:tg:person:%34%32')).toThrow(/"telegram:tg:person:42"/);
  });
});
