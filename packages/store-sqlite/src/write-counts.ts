import type { Database, Statement, Transaction } from 'better-sqlite3';

/**
 * What one connection has run since it opened: the benchmarks and `/metrics` divide them by
 * messages to show what each message costs the file (docs/BENCHMARKS.md "HTTP path").
 */
export interface WriteCounts {
  /** Transactions committed, a write outside a transaction counting as one: WAL commits. */
  readonly commits: number;
  /** Prepared statements run, reads included; `BEGIN` and `COMMIT` are not counted. */
  readonly statements: number;
}

type Counts = { commits: number; statements: number };

/** Counts `statement`'s runs; a write run outside a transaction commits on its own. */
function countRuns(db: Database, statement: Statement<unknown[], unknown>, counts: Counts): void {
  const { run, get, all, iterate } = statement;
  const write = !statement.reader;
  statement.run = (...parameters: unknown[]) => {
    counts.statements += 1;
    if (write && !db.inTransaction) counts.commits += 1;
    return run.apply(statement, parameters);
  };
  statement.get = (...parameters: unknown[]) => {
    counts.statements += 1;
    return get.apply(statement, parameters);
  };
  statement.all = (...parameters: unknown[]) => {
    counts.statements += 1;
    return all.apply(statement, parameters);
  };
  statement.iterate = (...parameters: unknown[]) => {
    counts.statements += 1;
    return iterate.apply(statement, parameters);
  };
}

type AnyFunction = (...args: unknown[]) => unknown;

/** `transaction` counted once per outermost call that returns (a nested one is a savepoint). */
function countCommits(db: Database, transaction: AnyFunction, counts: Counts): AnyFunction {
  return (...args) => {
    const outermost = !db.inTransaction;
    const result = transaction(...args);
    if (outermost) counts.commits += 1;
    return result;
  };
}

/**
 * Makes `db` count what it runs, from now on: every statement it prepares afterwards, and every
 * transaction it makes afterwards. Counting costs an increment per statement, so it is always on.
 * The methods are replaced on this connection object only, not on better-sqlite3's classes.
 */
export function countWrites(db: Database): WriteCounts {
  const counts: Counts = { commits: 0, statements: 0 };
  const prepare = db.prepare.bind(db);
  db.prepare = ((source: string) => {
    const statement = prepare(source);
    countRuns(db, statement, counts);
    return statement;
  }) as Database['prepare'];
  const transaction = db.transaction.bind(db);
  db.transaction = ((fn: AnyFunction) => {
    const made = transaction(fn) as unknown as Transaction<AnyFunction>;
    return Object.assign(countCommits(db, made, counts), {
      default: countCommits(db, made.default, counts),
      deferred: countCommits(db, made.deferred, counts),
      immediate: countCommits(db, made.immediate, counts),
      exclusive: countCommits(db, made.exclusive, counts),
    });
  }) as Database['transaction'];
  return {
    get commits() {
      return counts.commits;
    },
    get statements() {
      return counts.statements;
    },
  };
}
