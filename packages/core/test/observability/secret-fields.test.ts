import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import {
  isSecretField,
  secretEntries,
  secretField,
  secretValues,
} from '../../src/observability/secret-fields.js';

const ChannelSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('telegram'), id: z.string(), token: secretField(z.string().min(1)) }),
  z
    .strictObject({
      type: z.literal('openapi'),
      id: z.string(),
      api_keys: secretField(z.array(z.string())).default([]),
    })
    .transform((channel) => ({ id: channel.id, apiKeys: channel.api_keys })),
]);

const ConfigSchema = z.strictObject({
  admin: z.strictObject({ token: secretField(z.string()).optional() }).prefault({}),
  channels: z.array(ChannelSchema).default([]),
  headers: secretField(z.record(z.string(), z.string())).optional(),
  name: z.string().optional(),
});

describe('secretField', () => {
  it('marks the schema it returns and no other', () => {
    const marked = secretField(z.string());

    expect(isSecretField(marked)).toBe(true);
    expect(isSecretField(marked.optional())).toBe(false);
    expect(isSecretField(z.string())).toBe(false);
  });
});

describe('secretValues', () => {
  describe('when the data is valid', () => {
    it('collects the strings under every marked field through wrappers, unions and transforms', () => {
      const data = {
        admin: { token: 'admin-token' },
        channels: [
          { type: 'telegram', id: 'tg', token: 'tg-token' },
          { type: 'openapi', id: 'api', api_keys: ['key-1', 'key-2'] },
        ],
        headers: { authorization: 'Bearer header-secret' },
        name: 'not a secret',
      };

      expect(secretValues(ConfigSchema, data).sort()).toEqual(
        ['Bearer header-secret', 'admin-token', 'key-1', 'key-2', 'tg-token'].sort(),
      );
    });
  });

  describe('when the data does not match the schema', () => {
    it('still reports a value given in the wrong shape, with its path', () => {
      const data = { channels: [{ type: 'openapi', id: 'api', api_keys: 'sk-given-as-a-string' }] };

      expect(secretEntries(ConfigSchema, data)).toContainEqual({
        path: ['channels', 0, 'api_keys'],
        value: 'sk-given-as-a-string',
      });
      expect(secretValues(ConfigSchema, data)).toEqual(['sk-given-as-a-string']);
    });
  });
});
