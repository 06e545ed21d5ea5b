/**
 * The sweeper's queries: find deliveries that nobody is working on, and apply retention.
 * Each is bounded per run, so a large backlog is worked off over several runs.
 */
import type { DeliveryRef } from "../processing/messages";
import { isoTime } from "./clock";

export interface StrandedCutoffs {
  /** `received` and never attempted, unchanged since before this: its enqueue was lost. */
  readonly neverAttemptedBeforeMs: number;
  /** `received` after a failed attempt (waiting for its retry) since before this. */
  readonly retryWaitingBeforeMs: number;
  /** `processing` since before this: its lease (and its lease alarm) expired long ago. */
  readonly processingBeforeMs: number;
}

/**
 * Returns up to `limit` stranded deliveries and touches their `updated_at`, so the next run
 * does not send them again while they wait in the queue.
 */
export async function takeStranded(db: D1Database, cutoffs: StrandedCutoffs, nowMs: number, limit: number): Promise<DeliveryRef[]> {
  const { results } = await db
    .prepare(
      `UPDATE deliveries SET updated_at = ?1
        WHERE rowid IN (
          SELECT rowid FROM deliveries
           WHERE (status = 'received' AND attempts = 0 AND updated_at < ?2)
              OR (status = 'received' AND attempts > 0 AND updated_at < ?3)
              OR (status = 'processing' AND updated_at < ?4)
           ORDER BY updated_at
           LIMIT ?5)
        RETURNING source, id`,
    )
    .bind(
      isoTime(nowMs),
      isoTime(cutoffs.neverAttemptedBeforeMs),
      isoTime(cutoffs.retryWaitingBeforeMs),
      isoTime(cutoffs.processingBeforeMs),
      limit,
    )
    .all<DeliveryRef>();
  return results;
}

export interface RetentionResult {
  readonly deleted: number;
  readonly bodiesCleared: number;
}

/**
 * The two retention statements, exported so that a test can `EXPLAIN QUERY PLAN` exactly what runs.
 * Both walk an index from its oldest entry and stop at `?2` rows, and neither can meet a row it
 * already worked on: a deleted row is gone, and a pruned body leaves the partial index.
 */
export const RETENTION_SQL = {
  /**
   * Settled rows only. A `received` or `processing` row, a replayed one included, still has work
   * to do; deleting it would lose a delivery that was answered 200. Index: deliveries_by_status_age.
   */
  deleteSettled: `DELETE FROM deliveries
    WHERE rowid IN (SELECT rowid FROM deliveries
                     WHERE status IN ('done', 'failed') AND received_at < ?1 LIMIT ?2)`,
  /**
   * Bodies of done rows only: a failed row keeps its body for a replay. Index: the partial
   * deliveries_done_with_body (migrations/0005), which holds only the rows still to prune. Named:
   * without statistics SQLite prefers (status, received_at), which walks every pruned done row
   * again; INDEXED BY makes a missing index (or WHERE terms that no longer imply its own) an
   * error instead of a silent rescan.
   */
  clearBodies: `UPDATE deliveries SET body = NULL
    WHERE rowid IN (SELECT rowid FROM deliveries INDEXED BY deliveries_done_with_body
                     WHERE status = 'done' AND body IS NOT NULL AND received_at < ?1 LIMIT ?2)`,
} as const;

/**
 * Deletes settled (`done`, `failed`) rows received before `deleteBeforeMs` and clears the bodies of
 * `done` rows received before `clearBodiesBeforeMs`, at most `limit` of each per call.
 * @example
 * const { deleted, bodiesCleared } = await applyRetention(env.DB, now - 30 * DAY_MS, now - 7 * DAY_MS, 1_000);
 */
export async function applyRetention(db: D1Database, deleteBeforeMs: number, clearBodiesBeforeMs: number, limit: number): Promise<RetentionResult> {
  const [deleted, cleared] = await db.batch([
    db.prepare(RETENTION_SQL.deleteSettled).bind(isoTime(deleteBeforeMs), limit),
    db.prepare(RETENTION_SQL.clearBodies).bind(isoTime(clearBodiesBeforeMs), limit),
  ]);
  return { deleted: deleted!.meta.changes, bodiesCleared: cleared!.meta.changes };
}
