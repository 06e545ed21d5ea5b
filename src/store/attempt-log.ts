/**
 * A delivery's attempt history, for the dashboard: one entry per run that ended (done, retried,
 * failed, vanished, cut short) and per replay, oldest first, the last MAX_ATTEMPT_LOG kept.
 *
 * It is a JSON array in the delivery's own row (`attempt_log`, migrations/0008), appended by the
 * same UPDATE that records the run's result: no statement and no row written more per delivery.
 * The run's number comes from the row (`attempts` as it was before the update: SQLite evaluates
 * every SET expression against the old row), so it always agrees with `attempts`.
 */
import { isoTime } from "./clock";

export const MAX_ATTEMPT_LOG = 50;

export type AttemptOutcome = "done" | "unhandled" | "retry" | "failed" | "vanished" | "deferred" | "replayed";

export interface AttemptEntry {
  /** The run's number (1 for the first); null for what is not a run (a replay, a run cut short by the consumer). */
  readonly attempt: number | null;
  /** When the run started (ISO); null when nobody knows (a vanished run D1 never saw start). */
  readonly at: string | null;
  /** How long it ran (ms); null when not known. */
  readonly ms: number | null;
  readonly outcome: AttemptOutcome;
  readonly error: string | null;
  /**
   * How many deferrals in a row this entry stands for (`deferredAttempt`): present, and above 1,
   * only on a `deferred` entry that was repeated; its `at` and `ms` are the latest's.
   */
  readonly count?: number;
}

/** When a run started, as the consumer saw it: with the time of its result, the entry's `at` and `ms`. */
export interface RunTiming {
  readonly startedAtMs: number;
}

/**
 * The entry's JSON, to bind as the parameter of `appendAttempt` (its `attempt` is set in SQL).
 * @example
 * attemptJson("retry", Date.now(), { startedAtMs }, "HTTP 503");
 */
export function attemptJson(outcome: AttemptOutcome, nowMs: number, run: RunTiming | undefined, error: string | null = null): string {
  return JSON.stringify({
    attempt: null,
    at: run ? isoTime(run.startedAtMs) : outcome === "replayed" ? isoTime(nowMs) : null,
    ms: run ? Math.max(0, nowMs - run.startedAtMs) : null,
    outcome,
    error,
  });
}

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

const OUTCOMES = new Set<string>(["done", "unhandled", "retry", "failed", "vanished", "deferred", "replayed"]);

/** The entries of a row's `attempt_log` (empty for NULL or anything unreadable). */
export function attemptLogFromColumn(text: string | null): AttemptEntry[] {
  if (text === null) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  const entries: AttemptEntry[] = [];
  for (const item of parsed as Record<string, unknown>[]) {
    if (typeof item !== "object" || item === null || typeof item.outcome !== "string" || !OUTCOMES.has(item.outcome)) continue;
    entries.push({
      attempt: typeof item.attempt === "number" ? item.attempt : null,
      at: typeof item.at === "string" ? item.at : null,
      ms: typeof item.ms === "number" ? item.ms : null,
      outcome: item.outcome as AttemptOutcome,
      error: typeof item.error === "string" ? item.error : null,
      ...(typeof item.count === "number" && Number.isInteger(item.count) && item.count > 1 ? { count: item.count } : {}),
    });
  }
  return entries;
}
