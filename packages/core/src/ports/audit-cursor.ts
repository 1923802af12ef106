import { SwitchboardError } from '../model/errors.js';

/**
 * Where a newest-first audit page ended: the (at, id) of its last record. The next page starts
 * strictly below it, so records appended meanwhile (newer) never shift later pages.
 */
export interface AuditCursor {
  at: number;
  id: string;
}

/** The opaque `nextCursor` string for a position. */
export function encodeAuditCursor(position: AuditCursor): string {
  return Buffer.from(JSON.stringify([position.at, position.id])).toString('base64url');
}

/** Reads a cursor back; throws SB_HTTP_BAD_REQUEST naming `cursor` when it is not one of ours. */
export function decodeAuditCursor(cursor: string): AuditCursor {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (Number.isSafeInteger(at) && typeof id === 'string') return { at: at as number, id };
  } catch {
    // Falls through to the same error as well-formed JSON of the wrong shape.
  }
  throw new SwitchboardError('SB_HTTP_BAD_REQUEST', {
    message: 'cursor: not a cursor this audit log issued',
    details: { field: 'cursor' },
  });
}
