import { loadConfig } from '@switchboard/config';
import {
  type AuditQuery,
  type AuditRecord,
  OUTCOME_KINDS,
  type OutcomeKind,
  SwitchboardError,
} from '@switchboard/core';
import { openAuditReader } from '@switchboard/store-sqlite';
import { parseTimeBound } from '../time-bound.js';
import type { CommandIo } from './io.js';

export interface AuditFlags {
  outcome?: string;
  reason?: string;
  rule?: string;
  channel?: string;
  session?: string;
  since?: string;
  until?: string;
  limit?: string;
  cursor?: string;
  json: boolean;
}

function flagError(flag: string, problem: string): SwitchboardError {
  return new SwitchboardError('SB_CLI_USAGE', { message: `--${flag}: ${problem}` });
}

/** Turns the flags into an audit query, naming the flag that is wrong. */
export function auditQueryOf(flags: AuditFlags, nowMs: number): AuditQuery {
  const query: AuditQuery = { limit: 50 };
  if (flags.outcome !== undefined) {
    if (!(OUTCOME_KINDS as readonly string[]).includes(flags.outcome)) {
      throw flagError('outcome', `expected one of ${OUTCOME_KINDS.join('|')}, got "${flags.outcome}"`);
    }
    query.outcome = flags.outcome as OutcomeKind;
  }
  for (const key of ['reason', 'rule', 'channel', 'session', 'cursor'] as const) {
    if (flags[key] !== undefined) query[key] = flags[key];
  }
  for (const key of ['since', 'until'] as const) {
    const text = flags[key];
    if (text === undefined) continue;
    const at = parseTimeBound(text, nowMs);
    if (at === null) throw flagError(key, `expected a duration like 1h or an ISO date, got "${text}"`);
    query[key] = at;
  }
  if (flags.limit !== undefined) {
    const limit = Number(flags.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
      throw flagError('limit', `expected 1..1000, got "${flags.limit}"`);
    query.limit = limit;
  }
  return query;
}

const COLUMNS: Array<[string, (record: AuditRecord) => string, number]> = [
  ['AT', (r) => new Date(r.at).toISOString(), 24],
  ['OUTCOME', (r) => r.outcome, 13],
  ['REASON', (r) => r.reason ?? '', 16],
  ['RULE', (r) => r.rule ?? '', 16],
  ['CHANNEL', (r) => r.channel, 10],
  ['SESSION', (r) => r.session, 28],
  ['SENDER', (r) => r.sender_name ?? r.sender_id, 14],
  ['TEXT', (r) => (r.text ?? '').replace(/\s+/g, ' '), 40],
];

function cell(text: string, width: number): string {
  return text.length > width ? `${text.slice(0, width - 1)}…` : text.padEnd(width);
}

/**
 * `switchboard audit`: reads the audit log straight from the SQLite file, so it works while the
 * server is down (and, thanks to WAL, while it is running).
 */
export async function audit(path: string, flags: AuditFlags, io: CommandIo): Promise<number> {
  const config = await loadConfig(path);
  if (config.store.kind !== 'sqlite') {
    throw new SwitchboardError('SB_CONFIG_INVALID', {
      message: `store.kind: "${config.store.kind}" keeps no audit file to read; use GET /admin/audit on the running server`,
    });
  }
  const query = auditQueryOf(flags, Date.now());
  const reader = openAuditReader({ path: config.store.path });
  try {
    const page = await reader.auditLog.query(query);
    if (flags.json) {
      io.out(
        JSON.stringify(
          { items: page.items.map(({ payload: _payload, ...item }) => item), next_cursor: page.nextCursor },
          null,
          2,
        ),
      );
      return 0;
    }
    io.out(
      COLUMNS.map(([title, , width]) => cell(title, width))
        .join(' ')
        .trimEnd(),
    );
    for (const record of page.items) {
      io.out(
        COLUMNS.map(([, read, width]) => cell(read(record), width))
          .join(' ')
          .trimEnd(),
      );
    }
    io.out(
      `${page.items.length} record(s)${page.nextCursor ? `; more with --cursor ${page.nextCursor}` : ''}`,
    );
    return 0;
  } finally {
    reader.close();
  }
}
