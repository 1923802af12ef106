import { z } from 'zod';
import { ConfigSchema } from './schema.js';

/**
 * The JSON Schema (draft 2020-12) of what may be written in switchboard.yaml — the input side of
 * `ConfigSchema`, defaults included — for editors and the configuration reference (docs/configuration.md).
 */
export function configJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(ConfigSchema, {
    io: 'input',
    // A routing rule written as `all: [...]` has no `type`, declared as `z.undefined()`: in JSON
    // Schema that is a property that must be absent.
    unrepresentable: 'any',
    override: ({ zodSchema, jsonSchema }) => {
      if (zodSchema._zod.def.type === 'undefined') jsonSchema.not = {};
    },
  }) as Record<string, unknown>;
}
