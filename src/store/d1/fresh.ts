/**
 * Unfinished deliveries without an index of their own on the hot path (migrations/0016).
 *
 * A row is *untouched* while it is as its insert left it: `received`, lease_token NULL. Its first
 * run reads it and marks it done, and D1 sees nothing in between (lifecycle.ts), so nearly every
 * delivery is untouched until it is done, and an index entry written at insert would only be
 * removed a second later: a row written per delivery for nothing. Everything else that touches an
 * unfinished row (a takeover, a retry's result, a deferral, a fan-out, a replay) sets lease_token,
 * which puts it in the partial index deliveries_waiting.
 *
 * Untouched rows are found by walking the age index from the `fresh_from` mark: no untouched row is
 * ever behind it. Each sweep takes the untouched rows older than its cutoff (`takeUntouched`: their
 * enqueue was lost, or their first run is still at work and its requeue meets a busy lease), which
 * moves them into deliveries_waiting (lease_token 0: the fence reads coalesce(lease_token, 0), so 0
 * fences nothing), and moves the mark up to the first untouched row left, of any age (a delivery
 * still in its first run), else to the sweep's time. An insert is never dated before the mark
 * (record.ts), so a row that lands late (a browned-out database holding a grouped insert back)
 * cannot fall behind it. The stretch past the mark is then the rows stored since the oldest
 * delivery in flight at the last sweep: about a sweep's worth.
 *
 * The reads of that stretch are bounded by entries looked at, not by rows found: the oldest waiting
 * delivery (read on every overview, /admin/stats and metrics request) looks at UNTOUCHED_SCAN_LIMIT
 * entries at most, and stops at the first untouched one (an untouched row past them is younger than
 * all of them, and the sweeper takes it into the waiting index once it is older than its cutoff).
 * The overview's count of them reads the whole stretch, but only where it is put together: at most
 * once a minute, or while the stretch is short (store/d1/overview.ts).
 */
import type { DeliveryRef } from "../../delivery-ref";
import { markSql } from "./marks";

/** The `inbox_marks` row: the walk's start; no untouched row is before it. */
export const FRESH_FROM = "fresh_from";
/** The mark as an SQL expression ('' before the first sweep). */
export const FRESH_MARK_SQL = markSql(FRESH_FROM);
const MARK = FRESH_MARK_SQL;

/** The term of deliveries_waiting (SQLite uses a partial index only when a query repeats its term). */
export const WAITING_SQL = "status IN ('received', 'processing') AND lease_token IS NOT NULL";
/** A row as its insert left it. */
export const UNTOUCHED_SQL = "status = 'received' AND lease_token IS NULL";
/** The untouched rows' walk: the age index from the mark (the planner is told, as it cannot know how few rows are past it). */
export const UNTOUCHED_FROM = `FROM deliveries INDEXED BY deliveries_by_age WHERE received_at >= ${MARK} AND ${UNTOUCHED_SQL}`;

/** The first untouched row's `received_at` (NULL when none), as an SQL expression: where the mark goes, and where body pruning stops. */
export const FIRST_UNTOUCHED_SQL = `(SELECT received_at ${UNTOUCHED_FROM} ORDER BY received_at LIMIT 1)`;

/** Entries of the stretch past the mark that a read on a request's path looks at, at most. */
export const UNTOUCHED_SCAN_LIMIT = 5_000;

/**
 * The first `limit` entries past the mark, oldest first, with what tells an untouched row (a
 * subquery to select from): a bound on the rows looked at, not on the rows found, which are few.
 */
export function untouchedScan(limit: number | string, columns = "received_at, source, status, lease_token"): string {
  return `(SELECT ${columns} FROM deliveries INDEXED BY deliveries_by_age WHERE received_at >= ${MARK} ORDER BY received_at, source, id LIMIT ${limit})`;
}

/**
 * The oldest unfinished delivery's `received_at` (NULL when none): the first entry of the waiting
 * index, or the first untouched row among the first UNTOUCHED_SCAN_LIMIT entries past the mark
 * (the walk stops at it: nearly always the first entry, a delivery in its first run).
 */
export const OLDEST_UNFINISHED_SQL = `SELECT nullif(min(
    coalesce((SELECT MIN(received_at) FROM deliveries INDEXED BY deliveries_waiting WHERE ${WAITING_SQL}), '~'),
    coalesce((SELECT received_at FROM ${untouchedScan(UNTOUCHED_SCAN_LIMIT)} WHERE ${UNTOUCHED_SQL} ORDER BY received_at LIMIT 1), '~')), '~') AS oldest`;

/** The untouched rows stored before `?1`, left to take. */
const LEFT_BEFORE = `${UNTOUCHED_FROM} AND received_at < ?1`;

/** The sweeper's statements, exported so that a test can `EXPLAIN QUERY PLAN` them. */
export const TAKE_UNTOUCHED_SQL = {
  /**
   * Up to `?3` untouched rows stored and last written before `?1` (a row the mark dated forward,
   * record.ts, waits until its own write is that old): touched at `?2`, into the waiting index.
   */
  take: `UPDATE deliveries SET updated_at = ?2, lease_token = 0
    WHERE (source, id) IN (SELECT source, id ${LEFT_BEFORE} AND updated_at < ?1 ORDER BY received_at LIMIT ?3)
    RETURNING source, id`,
  /**
   * Goes right after `take`, in the same transaction: the mark moves to the first untouched row
   * left (of any age), else to the sweep's time `?1`; never back.
   */
  advance: `INSERT INTO inbox_marks (name, value)
    SELECT '${FRESH_FROM}', coalesce(${FIRST_UNTOUCHED_SQL}, ?1) WHERE true
    ON CONFLICT (name) DO UPDATE SET value = excluded.value WHERE excluded.value > value`,
} as const;

/**
 * Takes up to `limit` untouched deliveries stored before `cutoffIso` (their updated_at set to
 * `nowIso`, so that the waiting index's rules judge them from now on) and moves the mark past
 * what it leaves behind. Returns them, to be enqueued again.
 */
export async function takeUntouched(db: D1Database, cutoffIso: string, nowIso: string, limit: number): Promise<DeliveryRef[]> {
  if (limit <= 0) return [];
  const [taken] = await db.batch([db.prepare(TAKE_UNTOUCHED_SQL.take).bind(cutoffIso, nowIso, limit), db.prepare(TAKE_UNTOUCHED_SQL.advance).bind(nowIso)]);
  return taken!.results as unknown as DeliveryRef[];
}
