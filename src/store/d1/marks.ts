/**
 * `inbox_marks` (migrations/0006): a few named values the sweeper's bounded walks keep, such as
 * how far body pruning and the overview's count have come.
 */
import { COUNTED_THROUGH } from "../snapshot";

/** The value of mark `name` as an SQL expression, '' while it is not set (before its first run). */
export function markSql(name: string): string {
  return `coalesce((SELECT value FROM inbox_marks WHERE name = '${name}'), '')`;
}

/**
 * The overview's `counted_through` mark as an SQL expression ('' before the count's first walk,
 * store/d1/overview.ts). Here, below the overview, because the insert (record.ts), retention
 * (sweep.ts) and the walk of untouched rows (fresh.ts) all read it.
 */
export const COUNTED_MARK_SQL = markSql(COUNTED_THROUGH);
