import { type Config, loadConfig } from '@switchboard/config';
import { type AuditLog, type AuditQuery, type AuditRecord, SwitchboardError } from '@switchboard/core';
import { auditView } from '../admin/audit-view.js';
import { AuditFiltersSchema } from '../admin/audit-filters.js';
import type { CommandIo } from './io.js';
import type { z } from 'zod';

/** The filters as typed on the command line (text, which the schema parses), and `--json`. */
export type AuditFlags = { [Filter in keyof z.input<typeof AuditFiltersSchema>]?: string } & {
  json: boolean;
};

/** Turns the flags into an audit query, naming every flag that is wrong. */
export function auditQueryOf(flags: AuditFlags): AuditQuery {
  const { json: _json, ...filters } = flags;
  const result = AuditFiltersSchema.safeParse(filters);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `--${issue.path.join('.')}: ${issue.message}`);
  throw new SwitchboardError('SB_CLI_USAGE', { message: problems.join('\n'), details: { problems } });
}

const COLUMNS: Array<[string, (record: AuditRecord) => string, number]> = [
  ['AT', (r) => new Date(r.at).toISOString(), 24],
  ['OUTCOME', (r) => r.outcome, 13],
  ['REASON', (r) => r.reason ?? '', 16],
  ['RULE', (r) => r.rule ?? '', 16],
  ['CHANNEL', (r) => r.channel, 10],
  ['TENANT', (r) => r.tenant, 10],
  ['SESSION', (r) => r.session, 28],
  ['SENDER', (r) => r.sender_name ?? r.sender_id, 14],
  ['TEXT', (r) => (r.text ?? '').replace(/\s+/g, ' '), 40],
];

function cell(text: string, width: number): string {
  return text.length > width ? `${text.slice(0, width - 1)}…` : text.padEnd(width);
}

/**
 * The audit log `audit:` names, read directly: PostgreSQL, or the SQLite file (read-only; thanks
 * to WAL, also while the server runs). Either works while the server is down.
 */
async function openAuditLog(
  config: Config,
): Promise<{ auditLog: Pick<AuditLog, 'query'>; close(): Promise<void> }> {
  const { audit, store } = config;
  // Only the database named is loaded, with its client.
  if (audit.kind === 'postgres') {
    const { createPostgresStore } = await import('@switchboard/store-postgres');
    return createPostgresStore({ url: audit.url, schema: audit.schema, maxConnections: 1 });
  }
  if (store.kind !== 'sqlite') {
    throw new SwitchboardError('SB_CONFIG_INVALID', {
      message: `store.kind: "${store.kind}" keeps no audit file to read; use GET /admin/audit on the running server`,
    });
  }
  const { openAuditReader } = await import('@switchboard/store-sqlite');
  const reader = openAuditReader({ path: audit.path ?? store.path });
  return { auditLog: reader.auditLog, close: async () => reader.close() };
}

/** `switchboard audit`: one page of the audit log, as a table or as `GET /admin/audit` answers it. */
export async function audit(path: string, flags: AuditFlags, io: CommandIo): Promise<number> {
  const config = await loadConfig(path);
  const query = auditQueryOf(flags);
  const reader = await openAuditLog(config);
  try {
    const page = await reader.auditLog.query(query);
    if (flags.json) {
      io.out(JSON.stringify({ items: page.items.map(auditView), next_cursor: page.nextCursor }, null, 2));
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
    await reader.close();
  }
}
