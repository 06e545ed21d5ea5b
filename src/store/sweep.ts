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

/** Deletes rows received before `deleteBeforeMs`; clears bodies of done rows received before `clearBodiesBeforeMs`. */
export async function applyRetention(db: D1Database, deleteBeforeMs: number, clearBodiesBeforeMs: number, limit: number): Promise<RetentionResult> {
  const [deleted, cleared] = await db.batch([
    db
      .prepare("DELETE FROM deliveries WHERE rowid IN (SELECT rowid FROM deliveries WHERE received_at < ?1 LIMIT ?2)")
      .bind(isoTime(deleteBeforeMs), limit),
    db
      .prepare(
        `UPDATE deliveries SET body = NULL
          WHERE rowid IN (SELECT rowid FROM deliveries
                           WHERE status = 'done' AND received_at < ?1 AND body IS NOT NULL LIMIT ?2)`,
      )
      .bind(isoTime(clearBodiesBeforeMs), limit),
  ]);
  return { deleted: deleted!.meta.changes, bodiesCleared: cleared!.meta.changes };
}
