import { metricValueAt } from '@switchboard/testkit/prometheus';

/** The commits and statements a gateway with `store: sqlite` has run on its file so far. */
export interface StoreCounts {
  commits: number;
  statements: number;
}

/** Read from the gateway's `/metrics` (`switchboard_store_*_total`). */
export async function storeCountsAt(url: string): Promise<StoreCounts> {
  const [commits, statements] = await Promise.all([
    metricValueAt(url, 'switchboard_store_commits_total'),
    metricValueAt(url, 'switchboard_store_statements_total'),
  ]);
  return { commits, statements };
}

/** What one message cost between two readings, over `messages` messages. */
export function perMessage(before: StoreCounts, after: StoreCounts, messages: number): StoreCounts {
  return {
    commits: (after.commits - before.commits) / messages,
    statements: (after.statements - before.statements) / messages,
  };
}
