import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/load-config.js';
import { thrown } from './thrown.js';

const ROUTING = 'routing: { default: __discard__ }';

/** The problems `yaml` is refused with. */
function problemsOf(yaml: string): string[] {
  const error = thrown(() => parseConfig(yaml));
  expect(error.code).toBe('SB_CONFIG_INVALID');
  return (error.details?.problems ?? []) as string[];
}

describe('quotas', () => {
  describe('when a tenant lists quotas and a quota_reply', () => {
    it('keeps them on the tenant, periods in ms', () => {
      const config = parseConfig(`
tenants:
  - id: acme
    ${ROUTING}
    quotas:
      - { scope: sender, limit: 30, per: 1m }
      - { scope: session, limit: "500", per: 1h }
      - { scope: tenant, limit: 100000, per: 1d }
    quota_reply: "You have reached the message limit; try again later."
`);
      expect(config.tenants[1]).toMatchObject({
        id: 'acme',
        quotas: [
          { scope: 'sender', limit: 30, perMs: 60_000 },
          { scope: 'session', limit: 500, perMs: 3_600_000 },
          { scope: 'tenant', limit: 100_000, perMs: 86_400_000 },
        ],
        quotaReply: 'You have reached the message limit; try again later.',
      });
    });
  });

  describe('when the top level lists quotas', () => {
    it('makes them the tenant default’s, and leaves tenants without quotas unlimited', () => {
      const config = parseConfig(`
quotas: [ { scope: sender, limit: 5, per: 10s } ]
quota_reply: Slow down.
tenants: [ { id: acme, ${ROUTING} } ]
`);
      expect(config.tenants[0]).toMatchObject({
        id: 'default',
        quotas: [{ scope: 'sender', limit: 5, perMs: 10_000 }],
        quotaReply: 'Slow down.',
      });
      expect(config.tenants[1]).not.toHaveProperty('quotas');
      expect(config.tenants[1]).not.toHaveProperty('quotaReply');
      expect(config).not.toHaveProperty('quotas');
    });
  });

  describe('when a quota is wrong', () => {
    it('names the path of each problem: limit, period, scope, unknown key', () => {
      expect(
        problemsOf(`
tenants:
  - id: acme
    ${ROUTING}
    quotas:
      - { scope: sender, limit: 0, per: 1m }
      - { scope: session, limit: 2.5, per: 1m }
      - { scope: tenant, limit: 10, per: soon }
      - { scope: chat, limit: 10, per: 1m }
      - { scope: tenant, limit: 10, per: 500ms }
      - { scope: tenant, limit: 10, per: 1h, burst: 20 }
`),
      ).toEqual([
        'tenants[0].quotas[0].limit: must be >= 1, got 0',
        'tenants[0].quotas[1].limit: expected int, got 2.5',
        'tenants[0].quotas[2].per: invalid duration "soon" (use e.g. 1500ms, 1.5s, 5m)',
        'tenants[0].quotas[3].scope: expected one of sender|session|tenant, got "chat"',
        'tenants[0].quotas[4].per: must be between 1s and 31d, got "500ms"',
        'tenants[0].quotas[5]: unrecognized key "burst"',
      ]);
    });

    it('refuses a second quota of one scope over one period, and an empty quota_reply', () => {
      expect(
        problemsOf(`
quotas:
  - { scope: sender, limit: 30, per: 1m }
  - { scope: sender, limit: 20, per: 60s }
quota_reply: "  "
`),
      ).toEqual([
        'quotas[1]: a second sender quota over the same period (also [0]): keep the lower limit',
        'quota_reply: must not be empty, got ""',
      ]);
    });

    it('refuses more quotas than one take holds', () => {
      const quotas = Array.from(
        { length: 9 },
        (_, index) => `{ scope: tenant, limit: 10, per: ${index + 1}h }`,
      );
      expect(problemsOf(`quotas: [ ${quotas.join(', ')} ]`)).toEqual(['quotas: must have at most 8 items']);
    });
  });
});
