/**
 * Replay of fanned-out deliveries in D1 (migrations/0012): one subscriber's run of one delivery, the
 * runs of a delivery the replay reset, or a subscriber's failed runs in bulk. Each run gets a new
 * life as a delivery's replay gives it (replay.ts: received, attempts 0, its fence raised to the
 * replay's time), and its delivery's summary follows (subscriber-runs.ts `summarise`).
 */
import type { DeliveryRef, RunRef } from "../../delivery-ref";
import { attemptJson } from "../attempts";
import { isoTime } from "../clock";
import type { DeliveryStatus } from "../deliveries";
import type { FailedFilter, ReplayState } from "../replay-state";
import { appendAttempt, entryAt } from "./attempt-log";
import { WAITING_SQL } from "./fresh";
import { summarise } from "./subscriber-runs";

/** A new life, for the time `?t` and the replay's history entry `?e` (its fence: the time in ms, `?m`). */
function newLife(t: number, m: number, e: number): string {
  return `status = 'received', attempts = 0, error = NULL, handled = NULL, updated_at = ?${t},
          lease_token = max(coalesce(lease_token, 0), ?${m}), attempt_log = ${appendAttempt(entryAt(e, "NULL"))}`;
}

/** The replay state of one run, or null when there is none. */
export async function runReplayState(db: D1Database, ref: Required<RunRef>): Promise<ReplayState | null> {
  const row = await db
    .prepare(
      `SELECT r.status, d.body IS NULL AS pruned FROM subscriber_runs AS r JOIN deliveries AS d ON d.source = r.source AND d.id = r.id
        WHERE r.source = ?1 AND r.id = ?2 AND r.subscriber = ?3`,
    )
    .bind(ref.source, ref.id, ref.subscriber)
    .first<{ status: DeliveryStatus; pruned: number }>();
  return row ? { status: row.status, bodyPruned: row.pruned === 1 } : null;
}

/** One run back to `received` when its status is one of `from` and its delivery keeps its body, and the summary with it. Null when refused. */
export async function resetRunForReplay(db: D1Database, ref: Required<RunRef>, from: readonly ("failed" | "done")[], nowMs: number): Promise<RunRef[] | null> {
  const [reset] = await db.batch([
    db
      .prepare(
        `UPDATE subscriber_runs SET ${newLife(4, 5, 6)}
          WHERE source = ?1 AND id = ?2 AND subscriber = ?3 AND status IN (SELECT value FROM json_each(?7))
            AND EXISTS (SELECT 1 FROM deliveries WHERE source = ?1 AND id = ?2 AND body IS NOT NULL)
          RETURNING subscriber`,
      )
      .bind(ref.source, ref.id, ref.subscriber, isoTime(nowMs), nowMs, attemptJson("replayed", nowMs, undefined), JSON.stringify(from)),
    summarise(db, ref, nowMs),
  ]);
  return reset!.results.length > 0 ? [ref] : null;
}

/**
 * Goes right after a delivery's replay reset at `nowMs`: a fanned-out delivery's runs whose status
 * is one of `from` get their new life too (a delivery replayed `failed` re-runs its failed
 * subscribers only). Reads the delivery by its key (`only`), or for a bulk replay the rows of the
 * waiting index (fresh.ts: a replay sets lease_token) that this replay just reset. Returns the runs.
 */
export function resetRunsOfReplayed(db: D1Database, from: readonly ("failed" | "done")[], nowMs: number, only: DeliveryRef | null): D1PreparedStatement {
  const replayed = only
    ? "SELECT source, id FROM deliveries WHERE source = ?5 AND id = ?6 AND fanout IS NOT NULL AND status = 'received' AND updated_at = ?1"
    : `SELECT source, id FROM deliveries WHERE ${WAITING_SQL} AND status = 'received' AND fanout IS NOT NULL AND updated_at = ?1`;
  return db
    .prepare(
      `UPDATE subscriber_runs SET ${newLife(1, 2, 3)}
        WHERE status IN (SELECT value FROM json_each(?4)) AND (source, id) IN (${replayed})
        RETURNING source, id, subscriber`,
    )
    .bind(isoTime(nowMs), nowMs, attemptJson("replayed", nowMs, undefined), JSON.stringify(from), ...(only ? [only.source, only.id] : []));
}

/**
 * A subscriber's failed runs matching `filter`, up to `limit`, oldest first: reset, with their
 * deliveries' summaries. Walks the subscriber's failed index (migrations/0012).
 */
export async function resetFailedRunsForReplay(db: D1Database, filter: FailedFilter & { subscriber: string }, limit: number, nowMs: number): Promise<RunRef[]> {
  const { source, eventType, since, until } = filter;
  const { results } = await db
    .prepare(
      `UPDATE subscriber_runs SET ${newLife(1, 2, 3)}
        WHERE (source, id, subscriber) IN (
          SELECT r.source, r.id, r.subscriber FROM subscriber_runs AS r
           WHERE r.subscriber = ?4 AND r.status = 'failed'
             AND (?5 IS NULL OR r.received_at >= ?5) AND (?6 IS NULL OR r.received_at < ?6) AND (?7 IS NULL OR r.source = ?7)
             AND EXISTS (SELECT 1 FROM deliveries AS d WHERE d.source = r.source AND d.id = r.id AND d.body IS NOT NULL AND (?8 IS NULL OR d.event_type = ?8))
           ORDER BY r.received_at
           LIMIT ?9)
        RETURNING source, id, subscriber`,
    )
    .bind(isoTime(nowMs), nowMs, attemptJson("replayed", nowMs, undefined), filter.subscriber, since ?? null, until ?? null, source ?? null, eventType ?? null, limit)
    .all<Required<RunRef>>();
  const deliveries = new Map(results.map((run) => [`${run.source}\u0000${run.id}`, run]));
  if (deliveries.size > 0) await db.batch([...deliveries.values()].map((run) => summarise(db, run, nowMs)));
  return results;
}

/** How many failed runs of the subscriber matching `filter` a bulk replay would take. */
export async function countFailedRuns(db: D1Database, filter: FailedFilter & { subscriber: string }): Promise<number> {
  const row = await db
    .prepare(
      `SELECT COUNT(*) AS n FROM subscriber_runs AS r
        WHERE r.subscriber = ?1 AND r.status = 'failed'
          AND (?2 IS NULL OR r.received_at >= ?2) AND (?3 IS NULL OR r.received_at < ?3) AND (?4 IS NULL OR r.source = ?4)
          AND EXISTS (SELECT 1 FROM deliveries AS d WHERE d.source = r.source AND d.id = r.id AND d.body IS NOT NULL AND (?5 IS NULL OR d.event_type = ?5))`,
    )
    .bind(filter.subscriber, filter.since ?? null, filter.until ?? null, filter.source ?? null, filter.eventType ?? null)
    .first<{ n: number }>();
  return row?.n ?? 0;
}
