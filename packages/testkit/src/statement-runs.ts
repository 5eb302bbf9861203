/**
 * Counts the runs of one prepared statement from now on, for tests that check how many round trips or commits a
 * piece of code makes. It works on any database whose `prepare(sql)` returns the same cached statement for the same
 * text (Stratus's SqliteDatabase does), by wrapping that statement's `run`.
 */
export function countStatementRuns(
  database: { prepare(sql: string): { run(...parameters: never[]): unknown } },
  sql: string,
): { readonly count: number } {
  const counter = { count: 0 };
  const statement = database.prepare(sql);
  const run = statement.run.bind(statement);
  statement.run = (...parameters) => {
    counter.count++;
    return run(...parameters);
  };
  return counter;
}
