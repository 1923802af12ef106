import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import { validatorCompiler as zodValidatorCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';

/**
 * The validator compiler of the gateway and the channel: zod for every request part, but headers are validated by
 * the names their schema declares only. Parsing the whole header object with a loose schema
 * copied every header into a new object on every request — 1–2% of the gateway's CPU under load
 * (bench/HISTORY.md#tuning-pass-4-counted-costs) — to check one optional header. Headers stay as they came.
 */
export const validatorCompiler: FastifySchemaCompiler<z.ZodType> = (route) => {
  if (route.httpPart !== 'headers' || !(route.schema instanceof z.ZodObject))
    return zodValidatorCompiler(route);
  const names = Object.keys(route.schema.shape);
  const validateDeclared = zodValidatorCompiler({ ...route, schema: z.object(route.schema.shape) });
  return (headers: Record<string, unknown>) => {
    const declared: Record<string, unknown> = {};
    for (const name of names) if (headers[name] !== undefined) declared[name] = headers[name];
    // The zod compiler answers synchronously, `{ value }` or `{ error }`.
    const result = validateDeclared(declared) as { error?: FastifySchemaValidationError[] };
    return result.error === undefined ? true : result;
  };
};
