import type { z } from 'zod';

/**
 * Secret fields of a configuration (tokens, signing secrets, API keys) are marked on their zod
 * schema where the schema is declared, by the package that owns it. Everything that must keep
 * secrets out of sight reads the marks: the masker of log lines and audit errors collects the
 * configured values with `secretValues`, and config errors never echo a marked field's value.
 * So the list of secret fields is written once, next to the fields themselves.
 */

/** The marked schemas; a WeakSet so that marking never keeps a schema alive. */
const SECRET_SCHEMAS = new WeakSet<z.core.$ZodType>();

/**
 * Marks `schema` as holding a secret (a string, or a list or map of strings) and returns it.
 * Mark the innermost schema, after its checks: `secretField(z.string().min(1)).optional()`, since
 * every zod method returns a new, unmarked schema.
 */
export function secretField<T extends z.core.$ZodType>(schema: T): T {
  SECRET_SCHEMAS.add(schema);
  return schema;
}

/** Whether `schema` was marked with `secretField`. */
export function isSecretField(schema: unknown): boolean {
  return typeof schema === 'object' && schema !== null && SECRET_SCHEMAS.has(schema as z.core.$ZodType);
}

/** A value found under a secret field: where, and what was given (any type, as written). */
export interface SecretEntry {
  path: readonly PropertyKey[];
  value: unknown;
}

/** The parts of zod's schema definitions the walk follows into; every other kind is a leaf. */
interface WalkedDef {
  type: string;
  shape?: Record<string, z.core.$ZodType>;
  element?: z.core.$ZodType;
  valueType?: z.core.$ZodType;
  options?: readonly z.core.$ZodType[];
  left?: z.core.$ZodType;
  right?: z.core.$ZodType;
  in?: z.core.$ZodType;
  innerType?: z.core.$ZodType;
  getter?: () => z.core.$ZodType;
}

function isMapping(data: unknown): data is Record<string, unknown> {
  return typeof data === 'object' && data !== null && !Array.isArray(data);
}

function walk(schema: z.core.$ZodType, data: unknown, path: PropertyKey[], found: SecretEntry[]): void {
  if (data === undefined) return;
  if (SECRET_SCHEMAS.has(schema)) {
    found.push({ path, value: data });
    return;
  }
  const def = schema._zod.def as WalkedDef;
  switch (def.type) {
    case 'object':
      if (!isMapping(data)) return;
      for (const [key, field] of Object.entries(def.shape ?? {}))
        walk(field, data[key], [...path, key], found);
      return;
    case 'array':
      if (!Array.isArray(data) || def.element === undefined) return;
      for (const [index, item] of data.entries()) walk(def.element, item, [...path, index], found);
      return;
    case 'record':
      if (!isMapping(data) || def.valueType === undefined) return;
      for (const [key, item] of Object.entries(data)) walk(def.valueType, item, [...path, key], found);
      return;
    case 'union':
      // Every variant, not only the one that matches: a value under a field that is secret in any
      // variant is treated as a secret, and the data may not match any variant yet (config errors).
      for (const option of def.options ?? []) walk(option, data, path, found);
      return;
    case 'intersection':
      if (def.left) walk(def.left, data, path, found);
      if (def.right) walk(def.right, data, path, found);
      return;
    case 'pipe':
      // The input side: the walk reads data as written, before any transform reshapes it.
      if (def.in) walk(def.in, data, path, found);
      return;
    case 'lazy':
      if (def.getter) walk(def.getter(), data, path, found);
      return;
    default:
      // optional, nullable, default, prefault, readonly, catch…: a wrapper around `innerType`.
      if (def.innerType) walk(def.innerType, data, path, found);
  }
}

/**
 * Every value of `data` that sits under a field of `schema` marked with `secretField`, with its
 * path. `data` is read as written (before transforms), so it may be the raw input of a parse,
 * valid or not; the same path may appear twice when union variants share a secret field.
 */
export function secretEntries(schema: z.core.$ZodType, data: unknown): SecretEntry[] {
  const found: SecretEntry[] = [];
  walk(schema, data, [], found);
  return found;
}

function stringsIn(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  if (isMapping(value)) return Object.values(value).flatMap(stringsIn);
  return [];
}

/** The distinct non-empty strings under the secret fields of `schema` in `data` (see `secretEntries`). */
export function secretValues(schema: z.core.$ZodType, data: unknown): string[] {
  const values = secretEntries(schema, data).flatMap((entry) => stringsIn(entry.value));
  return [...new Set(values)].filter((value) => value !== '');
}
