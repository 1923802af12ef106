import { type AuditLog, type Logger, SwitchboardError } from '@switchboard/core';
import { toHttpError } from '@switchboard/http';

/** Most dead letters one `POST /admin/dead-letters/{replay,purge}` may name. */
export const MAX_SELECTION = 100;

/** What became of one dead letter of a selection. */
export type SelectionResult<T> =
  | ({ id: string; ok: true } & T)
  | {
      id: string;
      ok: false;
      /** `retry_after_ms`: when trying again may succeed (a full queue, a store out of reach). */
      error: { code: string; message: string; retry_after_ms?: number };
    };

/**
 * Applies `action` to each id in turn (replays are enqueues, one after the other): one id's
 * failure is its result, not the request's. A server-side failure is logged as the error
 * handler logs a failed request, since its answer only says "see the gateway log".
 */
export async function applyToSelection<T extends object>(
  ids: readonly string[],
  action: (id: string) => Promise<T>,
  logger: Logger,
): Promise<Array<SelectionResult<T>>> {
  const results: Array<SelectionResult<T>> = [];
  for (const id of ids) {
    try {
      results.push({ id, ok: true, ...(await action(id)) });
    } catch (err) {
      const { status, code, message, retryAfterMs } = toHttpError(err);
      if (status >= 500) logger.error({ err, code, deadLetterId: id }, 'dead letter action failed');
      results.push({
        id,
        ok: false,
        error: { code, message, ...(retryAfterMs === undefined ? {} : { retry_after_ms: retryAfterMs }) },
      });
    }
  }
  return results;
}

/**
 * Purges dead letters (`DELETE /admin/dead-letters/{id}`): throws SB_DEAD_LETTER_NOT_FOUND for an
 * unknown id. A replay already past its read still queues its message (the claim is its
 * enqueue); its replay mark then finds nothing, which it tolerates.
 */
export function createDeadLetterPurge(auditLog: AuditLog): (id: string) => Promise<{ status: 'purged' }> {
  return async (id) => {
    if (!(await auditLog.deleteDeadLetter(id))) {
      throw new SwitchboardError('SB_DEAD_LETTER_NOT_FOUND', {
        message: `no dead letter with id ${id}`,
        details: { id },
      });
    }
    return { status: 'purged' };
  };
}
