import type { Logger } from '@switchboard/core';

/** An error as pino's serializer writes it: its own fields, message, stack and cause. */
function errorFields(error: Error): Record<string, unknown> {
  return { ...error, name: error.name, message: error.message, stack: error.stack, cause: error.cause };
}

/**
 * A `Logger` that keeps every line as pino would write it (bindings of every child, the fields,
 * errors with their stacks, details and causes), for checks that read what was logged.
 */
export function capturingLogger() {
  const lines: string[] = [];
  const serialize = (value: unknown) =>
    JSON.stringify(value, (_key, field: unknown) => {
      if (field instanceof Error) return errorFields(field);
      if (typeof field === 'bigint') return String(field);
      return field;
    });
  function make(bindings: object): Logger {
    const write = (level: string) => (fields: object, message: string) => {
      lines.push(serialize({ level, ...bindings, ...fields, msg: message }));
    };
    return {
      debug: write('debug'),
      info: write('info'),
      warn: write('warn'),
      error: write('error'),
      child: (more) => make({ ...bindings, ...more }),
    };
  }
  return { logger: make({}), lines };
}
