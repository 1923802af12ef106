import { parseConfig } from '@switchboard/config';
import { describe, expect, it } from 'vitest';
import { configChanges } from '../../src/reload/config-changes.js';

const tenant = (rule: string) => `
tenants:
  - id: acme
    pipelines: [ { id: acme-echo, type: echo } ]
    routing:
      default: acme-echo
      rules: [ { name: ${rule}, type: message_content, operator: contains, value: x, pipeline: __discard__ } ]
`;

describe('configChanges', () => {
  describe('when only a tenant’s routing changes', () => {
    it('is a routing change named by the tenant, not the top-level routing', () => {
      const changes = configChanges(parseConfig(tenant('one')), parseConfig(tenant('two')));
      expect(changes.routing).toBe(true);
      expect(changes.summary).toEqual(['tenants.acme: changed']);
    });
  });

  describe('when quotas change', () => {
    it('puts them in force with the routing, naming the tenant, or quotas for the top level', () => {
      const top = configChanges(
        parseConfig(''),
        parseConfig('quotas: [ { scope: sender, limit: 5, per: 1m } ]'),
      );
      expect(top.routing).toBe(true);
      expect(top.summary).toEqual(['quotas']);
      const acme = configChanges(
        parseConfig(tenant('one')),
        parseConfig(`${tenant('one')}    quotas: [ { scope: tenant, limit: 9, per: 1h } ]\n`),
      );
      expect(acme.routing).toBe(true);
      expect(acme.summary).toEqual(['tenants.acme: changed']);
    });
  });

  describe('when a tenant is added', () => {
    it('adds its pipelines and names it', () => {
      const changes = configChanges(parseConfig(''), parseConfig(tenant('one')));
      expect(changes.routing).toBe(true);
      expect(changes.pipelines.added.map((pipeline) => pipeline.id)).toEqual(['acme-echo']);
      expect(changes.summary).toEqual(['pipelines.acme-echo: added', 'tenants.acme: added']);
    });
  });
});
