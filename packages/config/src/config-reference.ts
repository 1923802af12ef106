import { configJsonSchema } from './config-json-schema.js';

interface JsonSchema {
  type?: string | string[];
  format?: string;
  const?: unknown;
  enum?: unknown[];
  default?: unknown;
  description?: string;
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  oneOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  required?: string[];
}

interface Row {
  key: string;
  type: string;
  default: string;
  required: boolean;
}

const code = (value: unknown) => `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``;

function typeOf(schema: JsonSchema): string {
  if (schema.format === 'duration') return 'duration';
  if (schema.format === 'byte-size') return 'size';
  if (schema.const !== undefined) return code(schema.const);
  if (schema.enum !== undefined) return schema.enum.map(code).join(' \\| ');
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants !== undefined) return [...new Set(variants.map(typeOf))].join(' \\| ');
  const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type];
  // Numbers also accept numeric strings (for ${VAR} substitution): document them as numbers.
  if (types.includes('number')) return 'number';
  if (types[0] === 'array') return `list of ${schema.items ? typeOf(schema.items) : 'any'}`;
  return types[0] ?? 'any';
}

/** The variant name of a tagged union member (`kind: sqlite`, `type: telegram`). */
function tagOf(schema: JsonSchema): string | undefined {
  for (const tag of ['kind', 'type']) {
    const value = schema.properties?.[tag]?.const;
    if (value !== undefined) return `${tag}: ${String(value)}`;
  }
  return undefined;
}

function walk(schema: JsonSchema, key: string, required: boolean, rows: Row[]): void {
  const variants = schema.oneOf ?? schema.anyOf;
  if (schema.properties !== undefined) {
    for (const [name, child] of Object.entries(schema.properties)) {
      walk(child, key === '' ? name : `${key}.${name}`, schema.required?.includes(name) ?? false, rows);
    }
    return;
  }
  if (variants?.every((variant) => tagOf(variant) !== undefined)) {
    for (const variant of variants)
      walk({ ...variant, oneOf: undefined }, `${key} (${tagOf(variant)})`, required, rows);
    return;
  }
  if (typeOf(schema).startsWith('list of') && schema.items?.properties === undefined && schema.items?.oneOf) {
    walk(schema.items, `${key}[]`, required, rows);
    return;
  }
  rows.push({
    key,
    type: typeOf(schema),
    default: schema.default === undefined ? '' : code(schema.default),
    required,
  });
}

/**
 * The configuration reference as a Markdown table, generated from the schema so that docs/configuration.md
 * cannot drift from what the loader accepts (a test compares them).
 */
export function configReference(): string {
  const rows: Row[] = [];
  walk(configJsonSchema() as JsonSchema, '', false, rows);
  const lines = ['| key | type | default |', '| --- | --- | --- |'];
  for (const row of rows) {
    lines.push(`| \`${row.key}\`${row.required ? ' (required)' : ''} | ${row.type} | ${row.default} |`);
  }
  return lines.join('\n');
}
