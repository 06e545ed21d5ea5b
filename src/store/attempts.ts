/**
 * A delivery's attempt history, for the dashboard: one entry per run that ended (done, retried,
 * failed, vanished, cut short) and per replay, oldest first, the last MAX_ATTEMPT_LOG kept. Its
 * entries, the JSON of a new one (`attemptJson`) and the reading of the stored column
 * (`attemptLogFromColumn`), shared by the D1 store (its SQL: d1/attempt-log.ts) and the Postgres store
 * (postgres/attempt-log.ts), which each append in their own SQL.
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
  /**
   * Whose run it was, for a delivery one subscriber took (its row is that subscriber's progress):
   * stored with the result, so that listings, counts and replays can be read per subscriber. A
   * fanned-out delivery's runs are each in their subscriber's own row.
   */
  readonly subscriber?: string | null;
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
  return parsed.map(attemptEntryFrom).filter((entry) => entry !== null);
}

/**
 * One entry of the history, as parsed JSON (D1's `json_extract` text parsed, or Postgres's jsonb);
 * null for anything that is not one.
 */
export function attemptEntryFrom(value: unknown): AttemptEntry | null {
  const item = (typeof value === "string" ? safeParse(value) : value) as Record<string, unknown> | null;
  if (typeof item !== "object" || item === null || typeof item.outcome !== "string" || !OUTCOMES.has(item.outcome)) return null;
  return {
    attempt: typeof item.attempt === "number" ? item.attempt : null,
    at: typeof item.at === "string" ? item.at : null,
    ms: typeof item.ms === "number" ? item.ms : null,
    outcome: item.outcome as AttemptOutcome,
    error: typeof item.error === "string" ? item.error : null,
    ...(typeof item.count === "number" && Number.isInteger(item.count) && item.count > 1 ? { count: item.count } : {}),
  };
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
