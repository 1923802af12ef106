import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { describe, expect, it } from 'vitest';
import { type AdmissionPolicy, admit, GroupPolicySchema } from '../../src/inbound/admission.js';

interface MessageFields {
  chatType?: 'person' | 'group';
  isBot?: boolean;
  mentionsBot?: boolean;
  text?: string;
}

function message(fields: MessageFields = {}) {
  return inboundMessage({
    chat: { type: fields.chatType ?? 'group', id: '-100123' },
    sender: { id: 'u1', is_bot: fields.isBot ?? false },
    text: fields.text ?? 'hello',
    mentions_bot: fields.mentionsBot ?? false,
  });
}

const DEFAULT_POLICY: AdmissionPolicy = GroupPolicySchema.parse({});
const WITH_PREFIXES: AdmissionPolicy = GroupPolicySchema.parse({ prefixes: ['!bot', '/ask'] });

describe('admit', () => {
  describe('when the sender is a bot', () => {
    it.each([
      ['a person chat', { chatType: 'person' }, false],
      ['a group where it mentions the bot', { chatType: 'group', mentionsBot: true }, false],
      ['a message a rule routed', { chatType: 'group' }, true],
    ] as Array<[string, MessageFields, boolean]>)('ignores it in %s', (_where, fields, routedByRule) => {
      expect(admit(message({ ...fields, isBot: true }), DEFAULT_POLICY, routedByRule)).toEqual({
        admitted: false,
        reason: 'bot_author',
      });
    });
  });

  describe('when the chat is a person chat', () => {
    it('admits it without a mention', () => {
      expect(admit(message({ chatType: 'person' }), DEFAULT_POLICY, false)).toEqual({ admitted: true });
    });
  });

  describe('when the chat is a group', () => {
    it('ignores a message that does not address the bot', () => {
      expect(admit(message({ text: 'hello all' }), WITH_PREFIXES, false)).toEqual({
        admitted: false,
        reason: 'not_mentioned',
      });
    });

    it('admits a message a rule routed explicitly', () => {
      expect(admit(message({ text: 'hello all' }), DEFAULT_POLICY, true)).toEqual({ admitted: true });
    });

    it('admits every message when require_mention is false', () => {
      const policy = GroupPolicySchema.parse({ require_mention: false });
      expect(admit(message({ text: 'hello all' }), policy, false)).toEqual({ admitted: true });
    });

    it('admits a message that mentions the bot', () => {
      expect(admit(message({ mentionsBot: true }), DEFAULT_POLICY, false)).toEqual({ admitted: true });
    });

    it('admits a message starting with a prefix, after leading whitespace', () => {
      expect(admit(message({ text: '/ask what time is it' }), WITH_PREFIXES, false)).toEqual({
        admitted: true,
      });
      expect(admit(message({ text: ' \n !bot hi' }), WITH_PREFIXES, false)).toEqual({ admitted: true });
    });

    it('ignores a prefix that does not start the text', () => {
      expect(admit(message({ text: 'please /ask' }), WITH_PREFIXES, false)).toEqual({
        admitted: false,
        reason: 'not_mentioned',
      });
    });
  });
});

describe('GroupPolicySchema', () => {
  describe('when the group section is empty', () => {
    it('requires a mention and has no prefixes', () => {
      expect(DEFAULT_POLICY).toEqual({ require_mention: true, prefixes: [] });
    });
  });
});
