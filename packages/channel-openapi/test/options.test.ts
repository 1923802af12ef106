// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR} strings are the syntax under test, not templates
import { describe, expect, it } from 'vitest';
import { OpenApiChannelSchema } from '../src/options.js';

describe('OpenApiChannelSchema', () => {
  describe('when an openapi channel is configured', () => {
    it('drops empty api keys so ${API_KEY:-} means none', () => {
      const channel = OpenApiChannelSchema.parse({ id: 'api', type: 'openapi', api_keys: ['', 'k1'] });
      expect(channel).toMatchObject({ apiKeys: ['k1'] });
    });

    it('converts its timeouts to milliseconds and refuses a cap below the default wait', () => {
      const channel = OpenApiChannelSchema.parse({
        id: 'api',
        type: 'openapi',
        wait_timeout: '1.5s',
        max_wait_timeout: '5m',
      });
      expect(channel).toMatchObject({ waitTimeoutMs: 1500, maxWaitTimeoutMs: 300_000 });
      const bad = OpenApiChannelSchema.safeParse({
        id: 'api',
        type: 'openapi',
        wait_timeout: '10s',
        max_wait_timeout: '1500ms',
      });
      expect(bad.error?.issues[0]?.path).toEqual(['max_wait_timeout']);
    });
  });
});
