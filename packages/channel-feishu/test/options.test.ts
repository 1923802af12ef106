import { secretValues } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { FeishuChannelSchema } from '../src/options.js';

const APP = { id: 'fs', type: 'feishu', app_id: 'cli_a1', app_secret: 'app-secret', encrypt_key: 'enc-key' };

describe('FeishuChannelSchema', () => {
  describe('when only the app and the encrypt key are given', () => {
    it('targets open.feishu.cn in webhook mode, paced at 50 a second and 5 a second per chat', () => {
      expect(FeishuChannelSchema.parse(APP)).toMatchObject({
        appId: 'cli_a1',
        apiUrl: 'https://open.feishu.cn',
        encryptKey: 'enc-key',
        policy: { admission: { require_mention: true } },
        outbound: { rate: { perBot: { limit: 50 }, perChat: { limit: 5 } } },
      });
    });
  });

  describe('when the domain is lark or a URL', () => {
    it('targets open.larksuite.com, or the URL without its trailing slash', () => {
      expect(FeishuChannelSchema.parse({ ...APP, domain: 'lark' }).apiUrl).toBe('https://open.larksuite.com');
      expect(FeishuChannelSchema.parse({ ...APP, domain: 'http://127.0.0.1:9/' }).apiUrl).toBe(
        'http://127.0.0.1:9',
      );
    });
  });

  describe('when the mode is websocket', () => {
    it('needs neither an encrypt key nor a verification token, only an app id as the console shows it', () => {
      const config = { id: 'fs', type: 'feishu', app_secret: 'app-secret', mode: 'websocket' };
      expect(FeishuChannelSchema.parse({ ...config, app_id: 'cli_a1b2c3d4e5f60718' })).toMatchObject({
        mode: 'websocket',
        encryptKey: undefined,
      });
      const refused = FeishuChannelSchema.safeParse({ ...config, app_id: 'cli_a1' });
      expect(refused.error?.issues).toEqual([
        expect.objectContaining({ path: ['app_id'], message: expect.stringContaining('16 hex digits') }),
      ]);
    });

    it('stays webhook when no mode is given', () => {
      expect(FeishuChannelSchema.parse(APP).mode).toBe('webhook');
    });
  });

  describe('when the configuration is read for secrets', () => {
    it('marks the app secret, the encrypt key and the verification token as secrets', () => {
      const config = { ...APP, verification_token: 'v-token' };
      expect(secretValues(FeishuChannelSchema, config).sort()).toEqual(['app-secret', 'enc-key', 'v-token']);
    });
  });

  describe('when a value is wrong', () => {
    it.each([
      ['neither an encrypt key nor a verification token', { encrypt_key: undefined }, 'encrypt_key'],
      ['websocket mode with an app id the long connection refuses', { mode: 'websocket' }, '"app_id"'],
      ['a mode that is neither webhook nor websocket', { mode: 'socket' }, 'websocket'],
      ['a domain that is neither feishu, lark nor a URL', { domain: 'larksuite' }, 'feishu, lark'],
      ['a missing app secret', { app_secret: undefined }, 'app_secret'],
    ])('refuses %s, saying what is wrong', (_case, change, said) => {
      const result = FeishuChannelSchema.safeParse({ ...APP, ...change });
      expect(result.success).toBe(false);
      expect(JSON.stringify(result.error?.issues)).toContain(said);
    });
  });
});
