import { describe, expect, it } from 'vitest';
import { configJsonSchema } from '../src/config-json-schema.js';
import { ConfigSchema } from '../src/schema.js';

interface JsonSchema {
  type?: string;
  default?: unknown;
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  oneOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  additionalProperties?: boolean;
  not?: unknown;
}

describe('configJsonSchema', () => {
  const schema = configJsonSchema() as JsonSchema;

  describe('when generated', () => {
    it('describes every top-level section and refuses unknown keys', () => {
      expect(Object.keys(schema.properties ?? {}).sort()).toEqual(Object.keys(ConfigSchema.in.shape).sort());
      expect(schema.additionalProperties).toBe(false);
    });

    it('carries the input defaults, in YAML units', () => {
      const server = schema.properties?.server?.properties;
      expect(server?.host?.default).toBe('0.0.0.0');
      expect(server?.port?.default).toBe(8080);
      expect(schema.properties?.shutdown?.properties?.drain_timeout?.default).toBe('30s');
    });

    it('lists one variant per channel and pipeline type', () => {
      const typesOf = (section: string) =>
        (schema.properties?.[section]?.items?.oneOf ?? []).map(
          (variant) => (variant.properties?.type as { const?: string } | undefined)?.const,
        );
      expect(typesOf('channels')).toEqual([
        'openapi',
        'telegram',
        'slack',
        'discord',
        'line',
        'whatsapp',
        'teams',
        'feishu',
      ]);
      expect(typesOf('pipelines')).toEqual(['echo', 'http', 'openai', 'process']);
    });

    it('is plain JSON', () => {
      expect(JSON.parse(JSON.stringify(schema))).toEqual(schema);
    });
  });
});
