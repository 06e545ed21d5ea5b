/**
 * The attempt history's SQL (store/d1/attempt-log.ts) in Postgres: `attempt_log` is a jsonb array of
 * the same entries, appended by the same UPDATE that records a run's result, the last
 * MAX_ATTEMPT_LOG kept. The entry's JSON is bound as built by `attemptJson`; its `attempt` is set in
 * SQL from the row as it was before the update (Postgres, like SQLite, evaluates every SET
 * expression against the old row), so it always agrees with `attempts`.
 *
 * pg returns the column parsed; `attemptLogFromColumn` (store/attempts.ts) reads
 * `JSON.stringify` of it.
 */
import { MAX_ATTEMPT_LOG } from "../attempts";

const LOG = "coalesce(attempt_log, '[]'::jsonb)";

/**
 * The SQL value of `attempt_log` with `entrySql` (a jsonb expression, see `entryAt`) appended; the
 * oldest entry drops out past MAX_ATTEMPT_LOG.
 * @example
 * `UPDATE deliveries SET attempt_log = ${appendAttempt(entryAt(6, "attempts + 1"))} WHERE …`
 */
export function appendAttempt(entrySql: string): string {
  return `(CASE WHEN jsonb_array_length(${LOG}) >= ${MAX_ATTEMPT_LOG} THEN ${LOG} - 0 ELSE ${LOG} END) || jsonb_build_array(${entrySql})`;
}

/**
 * The entry bound at `$param` (`attemptJson`) with its `attempt` set to `attemptSql`, an SQL
 * expression of the old row (e.g. `attempts + 1`), or `NULL` (the bound entry's own null).
 */
export function entryAt(param: number, attemptSql: string): string {
  const entry = `$${param}::jsonb`;
  return attemptSql === "NULL" ? entry : `${entry} || jsonb_build_object('attempt', ${attemptSql})`;
}

/**
 * The SQL value of `attempt_log` with the deferral bound at `$param` added: when the last entry is a
 * deferral with the same error, that entry is updated in place instead (its `at` and `ms` set to
 * the new one's, its `count`, 1 when absent, plus one), as D1's `deferredAttempt` does.
 */
export function deferredAttempt(param: number): string {
  const entry = `$${param}::jsonb`;
  const last = `(${LOG} -> -1)`;
  const repeated = `${last} ->> 'outcome' = 'deferred' AND (${last} ->> 'error') IS NOT DISTINCT FROM (${entry} ->> 'error')`;
  const updated = `jsonb_set(${LOG}, '{-1}', ${last} || jsonb_build_object('at', ${entry} -> 'at', 'ms', ${entry} -> 'ms', 'count', coalesce((${last} ->> 'count')::bigint, 1) + 1))`;
  return `CASE WHEN ${repeated} THEN ${updated} ELSE ${appendAttempt(entryAt(param, "NULL"))} END`;
}
