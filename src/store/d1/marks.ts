/**
 * `inbox_marks` (migrations/0006): a few named values the sweeper's bounded walks keep, such as
 * how far body pruning and the overview's count have come.
 */

/** The value of mark `name` as an SQL expression, '' while it is not set (before its first run). */
export function markSql(name: string): string {
  return `coalesce((SELECT value FROM inbox_marks WHERE name = '${name}'), '')`;
}
