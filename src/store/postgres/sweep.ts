/**
 * The sweeper's queries in Postgres: find deliveries that nobody is working on, and apply
 * retention. Each is bounded per run, so a large backlog is worked off over several runs. Same
 * statements and promises as the D1 store's (store/d1/sweep.ts, whose comments give the reasons);
 * what Postgres adds is that two sweeps, a replay and the consumer may write at the same moment.
 *
 * So each statement picks its rows `FOR UPDATE SKIP LOCKED`: the lock rechecks a row picked from
 * the statement's snapshot against its latest version (one that moved on meanwhile drops out), and a
 * row another writer holds right now (a consumer recording a result, a replay, another sweep) is
 * left to the next run. Two sweeps at once take disjoint rows.
 */
import type { DeliveryRef, RunRef } from "../../delivery-ref";
import { isoTime } from "../clock";
import { BODIES_PRUNED_THROUGH, type RetentionResult, type StrandedCutoffs } from "../sweeping";
import { lockCountedMark } from "./overview";
import { ownTransaction, type Queryable } from "./queryable";

/**
 * Returns up to `limit` stranded deliveries and touches their `updated_at`, so the next run does
 * not send them again while they wait in the queue.
 * @example
 * const refs = await takeStranded(client, { neverAttemptedBeforeMs: now - 60_000, retryWaitingBeforeMs: now - 60_000, processingBeforeMs: now - 600_000 }, now, 500);
 */
export async function takeStranded(q: Queryable, cutoffs: StrandedCutoffs, nowMs: number, limit: number): Promise<RunRef[]> {
  const { rows } = await q.query<DeliveryRef>(
    `UPDATE deliveries SET updated_at = $1
      WHERE (source, id) IN (
        SELECT source, id FROM deliveries
         WHERE status IN ('received', 'processing')
           AND ((fanout IS NULL AND status = 'received' AND attempts = 0 AND updated_at < $2)
             OR (fanout IS NULL AND status = 'received' AND attempts > 0 AND updated_at < $3)
             OR (fanout IS NULL AND status = 'processing' AND updated_at < $4)
             -- A fanned-out delivery waits on its runs, the longest as long as a retry: its updates move it.
             OR (fanout IS NOT NULL AND updated_at < $3))
         ORDER BY updated_at
         LIMIT $5
         FOR UPDATE SKIP LOCKED)
      RETURNING source, id`,
    [isoTime(nowMs), isoTime(cutoffs.neverAttemptedBeforeMs), isoTime(cutoffs.retryWaitingBeforeMs), isoTime(cutoffs.processingBeforeMs), limit],
  );
  const refs: RunRef[] = rows.map((row) => ({ source: row.source, id: row.id }));
  if (refs.length >= limit) return refs;
  return [...refs, ...(await takeStrandedRuns(q, cutoffs, nowMs, limit - refs.length))];
}

/** The stranded runs of fanned-out deliveries, by the same rules (D1's `takeStrandedRuns`). */
async function takeStrandedRuns(q: Queryable, cutoffs: StrandedCutoffs, nowMs: number, limit: number): Promise<RunRef[]> {
  const { rows } = await q.query<Required<RunRef>>(
    `UPDATE subscriber_runs SET updated_at = $1
      WHERE (source, id, subscriber) IN (
        SELECT source, id, subscriber FROM subscriber_runs
         WHERE status IN ('received', 'processing')
           AND ((status = 'received' AND attempts = 0 AND updated_at < $2)
             OR (status = 'received' AND attempts > 0 AND updated_at < $3)
             OR (status = 'processing' AND updated_at < $4))
         ORDER BY updated_at
         LIMIT $5
         FOR UPDATE SKIP LOCKED)
      RETURNING source, id, subscriber`,
    [isoTime(nowMs), isoTime(cutoffs.neverAttemptedBeforeMs), isoTime(cutoffs.retryWaitingBeforeMs), isoTime(cutoffs.processingBeforeMs), limit],
  );
  return rows.map((row) => ({ source: row.source, id: row.id, subscriber: row.subscriber }));
}

/** Where body pruning stopped last ('' before its first run). */
const WATERMARK = `(SELECT coalesce((SELECT value FROM inbox_marks WHERE name = '${BODIES_PRUNED_THROUGH}'), ''))`;

/**
 * The retention statements, exported so that a test can EXPLAIN exactly what runs. Each walks the
 * age index and stops at `$2` rows, and neither meets a row it already worked on.
 */
export const RETENTION_SQL = {
  /**
   * Settled rows only, received before `$1`, the `$2` oldest: a `received` or `processing` row, a
   * replayed one included, still has work to do. The same statement takes what it deleted out of the
   * overview's counts (store/d1/overview.ts), by source: from `total` the rows received before the
   * count's mark `$3` (which the caller holds locked: a walk cannot count past it meanwhile), from
   * `unhandled` the unhandled ones. D1 runs the uncount first and picks the same rows by the
   * deletion's total order; here it reads the rows the DELETE returns, so they are the same rows.
   */
  deleteSettled: `WITH deleted AS (
      DELETE FROM deliveries WHERE (source, id) IN (
        SELECT source, id FROM deliveries WHERE received_at < $1 AND status IN ('done', 'failed')
         ORDER BY received_at, source, id LIMIT $2 FOR UPDATE SKIP LOCKED)
      RETURNING source, received_at, status, handled),
    uncounted AS (
      INSERT INTO inbox_counts AS counts (source, total, unhandled)
      SELECT source, -count(*) FILTER (WHERE received_at < $3), -count(*) FILTER (WHERE status = 'done' AND handled = false)
        FROM deleted GROUP BY source
      ON CONFLICT (source) DO UPDATE SET total = counts.total + excluded.total, unhandled = counts.unhandled + excluded.unhandled)
    SELECT count(*)::int AS n FROM deleted`,
  /**
   * Bodies of done rows received before `$1` (a failed row keeps its body for a replay), and their
   * request headers with them, from the watermark: the next `$2` rows of the age index past it
   * (`through`), stopping short of the oldest unfinished delivery past the watermark, which may still
   * become done and must then lose its body too. The watermark moves to `through` in the same
   * statement, never back; nothing when no row was left. A run reads no row pruned before. A row that
   * left `done` meanwhile (replayed) keeps its body until retention deletes it, as in D1.
   */
  clearBodies: `WITH through AS (
      SELECT max(received_at) AS value FROM (
        SELECT received_at FROM deliveries
         WHERE received_at > ${WATERMARK}
           AND received_at < $1
           AND received_at < coalesce((SELECT min(received_at) FROM deliveries WHERE status IN ('received', 'processing')
                                         AND received_at > ${WATERMARK}), $1)
         ORDER BY received_at LIMIT $2) AS stretch),
    cleared AS (
      UPDATE deliveries SET body = NULL, body_encoding = NULL, headers = NULL
       WHERE received_at > ${WATERMARK} AND received_at <= (SELECT value FROM through)
         AND status = 'done' AND body IS NOT NULL
      RETURNING 1),
    moved AS (
      INSERT INTO inbox_marks AS marks (name, value) SELECT '${BODIES_PRUNED_THROUGH}', value FROM through WHERE value IS NOT NULL
      ON CONFLICT (name) DO UPDATE SET value = excluded.value WHERE excluded.value > marks.value)
    SELECT count(*)::int AS n FROM cleared`,
} as const;

/**
 * Deletes settled (`done`, `failed`) rows received before `deleteBeforeMs` and clears the bodies of
 * `done` rows received before `clearBodiesBeforeMs`, at most `limit` of each per call. The deletion
 * runs in a transaction of its own, holding the overview count's mark shared (`lockCountedMark`), so
 * `q` must not be in a transaction already.
 * @example
 * const { deleted, bodiesCleared } = await applyRetention(client, now - 30 * DAY_MS, now - 7 * DAY_MS, 1_000);
 */
export async function applyRetention(q: Queryable, deleteBeforeMs: number, clearBodiesBeforeMs: number, limit: number): Promise<RetentionResult> {
  const deleted = await ownTransaction(q, async () => {
    const mark = await lockCountedMark(q, "SHARE");
    const { rows } = await q.query<{ n: number }>(RETENTION_SQL.deleteSettled, [isoTime(deleteBeforeMs), limit, mark]);
    return rows[0]?.n ?? 0;
  });
  const { rows } = await q.query<{ n: number }>(RETENTION_SQL.clearBodies, [isoTime(clearBodiesBeforeMs), limit]);
  return { deleted, bodiesCleared: rows[0]?.n ?? 0 };
}
