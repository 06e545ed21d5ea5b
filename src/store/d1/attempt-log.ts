/**
 * A delivery's attempt history in D1 (its entries and their JSON: store/attempts.ts).
 *
 * It is a JSON array in the delivery's own row (`attempt_log`, migrations/0008), appended by the
 * same UPDATE that records the run's result: no statement and no row written more per delivery.
 * The run's number comes from the row (`attempts` as it was before the update: SQLite evaluates
 * every SET expression against the old row), so it always agrees with `attempts`.
 */
import { MAX_ATTEMPT_LOG } from "../attempts";

/**
 * The SQL value of `attempt_log` with `entrySql` (an SQL JSON expression, see `entryAt`)
 * appended; the oldest entry drops out past MAX_ATTEMPT_LOG.
 */
export function appendAttempt(entrySql: string): string {
  const log = "coalesce(attempt_log, '[]')";
  return `json_insert(CASE WHEN json_array_length(${log}) >= ${MAX_ATTEMPT_LOG} THEN json_remove(${log}, '$[0]') ELSE ${log} END, '$[#]', ${entrySql})`;
}

/**
 * The SQL value of `attempt_log` with the deferral bound at `?param` (`attemptJson`, outcome
 * `deferred`) added: when the last entry is a deferral with the same error, that entry is
 * updated in place instead (its `at` and `ms` set to the new one's, its `count`, 1 when absent,
 * plus one), so that a delivery waiting many times for a forward slot does not push its real
 * attempts out of the MAX_ATTEMPT_LOG kept. Still one value of the same UPDATE.
 */
export function deferredAttempt(param: number): string {
  const log = "coalesce(attempt_log, '[]')";
  const last = (field: string) => `json_extract(${log}, '$[#-1].${field}')`;
  const repeated = `${last("outcome")} = 'deferred' AND ${last("error")} IS json_extract(?${param}, '$.error')`;
  const updated = `json_set(${log}, '$[#-1].at', json_extract(?${param}, '$.at'), '$[#-1].ms', json_extract(?${param}, '$.ms'), '$[#-1].count', coalesce(${last("count")}, 1) + 1)`;
  return `CASE WHEN ${repeated} THEN ${updated} ELSE ${appendAttempt(entryAt(param, "NULL"))} END`;
}

/**
 * The entry bound at `?param` (`attemptJson`) with its `attempt` set to `attemptSql`, an SQL
 * expression of the old row (e.g. `attempts + 1`), or `NULL`.
 */
export function entryAt(param: number, attemptSql: string): string {
  return `json_set(?${param}, '$.attempt', ${attemptSql})`;
}

