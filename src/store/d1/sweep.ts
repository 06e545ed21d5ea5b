/**
 * The sweeper's queries: find deliveries that nobody is working on, and apply retention.
 * Each is bounded per run, so a large backlog is worked off over several runs.
 */
import type { DeliveryRef, RunRef } from "../../delivery-ref";
import { isoTime } from "../clock";
import { COUNTED_MARK_SQL, markSql } from "./marks";
import { FIRST_UNTOUCHED_SQL, takeUntouched, WAITING_SQL } from "./fresh";
import { BODIES_PRUNED_THROUGH, type RetentionResult, type StrandedCutoffs } from "../sweeping";

/**
 * Returns up to `limit` stranded deliveries and touches their `updated_at`, so the next run
 * does not send them again while they wait in the queue: the untouched ones stored before the
 * never-attempted cutoff (fresh.ts) and those of the waiting index by the rules below, then
 * fanned-out deliveries' runs. The untouched take at most half the limit first, and what the
 * waiting leave of theirs: a backlog of untouched rows (a queue that was down) never holds back a
 * run that vanished mid-work, nor the other way round.
 */
export async function takeStranded(db: D1Database, cutoffs: StrandedCutoffs, nowMs: number, limit: number): Promise<RunRef[]> {
  const cutoff = isoTime(cutoffs.neverAttemptedBeforeMs);
  const now = isoTime(nowMs);
  const half = Math.ceil(limit / 2);
  const untouched = await takeUntouched(db, cutoff, now, half);
  const waiting = await takeWaiting(db, cutoffs, nowMs, limit - untouched.length);
  // Only a full first take can have left untouched rows for the rest of the limit.
  const more = untouched.length === half ? await takeUntouched(db, cutoff, now, limit - untouched.length - waiting.length) : [];
  const taken = [...untouched, ...waiting, ...more];
  if (taken.length >= limit) return taken;
  return [...taken, ...(await takeStrandedRuns(db, cutoffs, nowMs, limit - taken.length))];
}

/** Up to `limit` stranded deliveries of the waiting index, by the rules of `takeStranded`. */
async function takeWaiting(db: D1Database, cutoffs: StrandedCutoffs, nowMs: number, limit: number): Promise<DeliveryRef[]> {
  if (limit <= 0) return [];
  const { results } = await db
    .prepare(
      `UPDATE deliveries SET updated_at = ?1
        WHERE (source, id) IN (
          SELECT source, id FROM deliveries INDEXED BY deliveries_waiting
           WHERE ${WAITING_SQL}
             AND ((fanout IS NULL AND status = 'received' AND attempts = 0 AND updated_at < ?2)
               OR (fanout IS NULL AND status = 'received' AND attempts > 0 AND updated_at < ?3)
               OR (fanout IS NULL AND status = 'processing' AND updated_at < ?4)
               -- A fanned-out delivery waits on its runs, the longest as long as a retry: its updates move it.
               OR (fanout IS NOT NULL AND updated_at < ?3))
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

/**
 * The stranded runs of fanned-out deliveries (migrations/0012), by the same rules: a run whose
 * message was lost, or whose worker and lease alarm both vanished, is sent again.
 */
async function takeStrandedRuns(db: D1Database, cutoffs: StrandedCutoffs, nowMs: number, limit: number): Promise<RunRef[]> {
  const { results } = await db
    .prepare(
      `UPDATE subscriber_runs SET updated_at = ?1
        WHERE (source, id, subscriber) IN (
          SELECT source, id, subscriber FROM subscriber_runs
           WHERE status IN ('received', 'processing')
             AND ((status = 'received' AND attempts = 0 AND updated_at < ?2)
               OR (status = 'received' AND attempts > 0 AND updated_at < ?3)
               OR (status = 'processing' AND updated_at < ?4))
           ORDER BY updated_at
           LIMIT ?5)
        RETURNING source, id, subscriber`,
    )
    .bind(isoTime(nowMs), isoTime(cutoffs.neverAttemptedBeforeMs), isoTime(cutoffs.retryWaitingBeforeMs), isoTime(cutoffs.processingBeforeMs), limit)
    .all<Required<RunRef>>();
  return results;
}

/** Where body pruning stopped last, as an SQL expression ('' before its first run). */
const WATERMARK = markSql(BODIES_PRUNED_THROUGH);

/**
 * The next stretch of body pruning, as an SQL expression: the `received_at` of the `?2`-th row
 * (at most) after the watermark and before the cutoff `?1`, walking the age index; NULL when no
 * row is left there. It stops short of the oldest unfinished delivery past the watermark (the
 * waiting index's, or the first untouched one: fresh.ts), which may still become done and must
 * then lose its body too; one behind the watermark (a failed delivery replayed after pruning
 * passed it) holds nothing up.
 */
const PRUNE_THROUGH = `(SELECT max(received_at) FROM (
    SELECT received_at FROM deliveries
     WHERE received_at > ${WATERMARK}
       AND received_at < ?1
       AND received_at < coalesce((SELECT MIN(received_at) FROM deliveries INDEXED BY deliveries_waiting WHERE ${WAITING_SQL}
                                     AND received_at > ${WATERMARK}), ?1)
       AND received_at < coalesce(${FIRST_UNTOUCHED_SQL}, ?1)
     ORDER BY received_at LIMIT ?2))`;

/** The rows retention deletes in one run: settled, received before `?1`, the `?2` oldest. */
const DELETION = "SELECT source, id, received_at FROM deliveries WHERE received_at < ?1 AND status IN ('done', 'failed') ORDER BY received_at, source, id LIMIT ?2";

/**
 * The retention statements, exported so that a test can `EXPLAIN QUERY PLAN` exactly what runs.
 * Each walks the age index and stops at `?2` rows, and neither meets a row it already worked on.
 */
export const RETENTION_SQL = {
  /**
   * Settled rows only. A `received` or `processing` row, a replayed one included, still has work
   * to do; deleting it would lose a delivery that was answered 200. Index: deliveries_by_age,
   * from its oldest entry: what is older than the retention is settled but for the odd stuck row.
   */
  deleteSettled: `DELETE FROM deliveries WHERE (source, id) IN (SELECT source, id FROM (${DELETION})) RETURNING 1`,
  /**
   * Goes first, in the same transaction: takes the rows `deleteSettled` is about to delete out of
   * the overview's counts (store/d1/overview.ts), in one pass grouped by source: from `total` those
   * the count has passed, from `unhandled` the unhandled ones. The deletion's order is total, so
   * both statements pick the same rows.
   */
  uncountDeleted: `INSERT INTO inbox_counts (source, total, unhandled)
    SELECT source, -SUM(received_at < ${COUNTED_MARK_SQL}), -SUM(status = 'done' AND handled IS 0)
      FROM deliveries WHERE (source, id) IN (SELECT source, id FROM (${DELETION})) GROUP BY source
    ON CONFLICT (source) DO UPDATE SET total = total + excluded.total, unhandled = unhandled + excluded.unhandled`,
  /**
   * Bodies of done rows only (a failed row keeps its body for a replay), and their request headers
   * with them (both may hold personal data), from a watermark: each
   * run takes the next `?2` rows of the age index past the point where the last run stopped,
   * clears the bodies of the done ones, and moves the watermark to the last of them (the next
   * statement). A run reads no row pruned before, and no index pays for this on the hot path
   * (a partial index of done rows with a body cost a row written per delivery).
   * The watermark never passes an unfinished delivery; a failed one that is replayed after it was
   * passed keeps its body until retention deletes the row.
   */
  clearBodies: `UPDATE deliveries SET body = NULL, body_encoding = NULL, headers = NULL
    WHERE received_at > ${WATERMARK}
      AND received_at <= ${PRUNE_THROUGH}
      AND status = 'done' AND body IS NOT NULL`,
  /** Moves the watermark to where `clearBodies` stopped; nothing when it found no row. */
  advancePruning: `INSERT INTO inbox_marks (name, value)
    SELECT '${BODIES_PRUNED_THROUGH}', through FROM (SELECT ${PRUNE_THROUGH} AS through) WHERE through IS NOT NULL
    ON CONFLICT (name) DO UPDATE SET value = excluded.value WHERE excluded.value > value`,
} as const;

/**
 * Deletes settled (`done`, `failed`) rows received before `deleteBeforeMs` and clears the bodies of
 * `done` rows received before `clearBodiesBeforeMs`, at most `limit` of each per call.
 * @example
 * const { deleted, bodiesCleared } = await applyRetention(env.DB, now - 30 * DAY_MS, now - 7 * DAY_MS, 1_000);
 */
export async function applyRetention(db: D1Database, deleteBeforeMs: number, clearBodiesBeforeMs: number, limit: number): Promise<RetentionResult> {
  const clearBefore = isoTime(clearBodiesBeforeMs);
  // One transaction: the watermark moves exactly as far as the bodies were cleared, and the
  // overview's totals lose exactly the rows deleted.
  const [, deleted, cleared] = await db.batch([
    db.prepare(RETENTION_SQL.uncountDeleted).bind(isoTime(deleteBeforeMs), limit),
    db.prepare(RETENTION_SQL.deleteSettled).bind(isoTime(deleteBeforeMs), limit),
    db.prepare(RETENTION_SQL.clearBodies).bind(clearBefore, limit),
    db.prepare(RETENTION_SQL.advancePruning).bind(clearBefore, limit),
  ]);
  // Counted by what the deletion returns: D1's `changes` would add the rows the failed-delivery
  // counter's trigger updates (migrations/0015).
  return { deleted: deleted!.results.length, bodiesCleared: cleared!.meta.changes };
}
