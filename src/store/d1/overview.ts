/**
 * The overview's numbers (the dashboard's first page and `/admin/metrics`) without counting the
 * table per request: D1 runs one query at a time, so a dashboard left open and a scrape every 15 s
 * must not each walk a million rows while providers wait for their 200.
 *
 * Where each number comes from (migrations/0008):
 * - how many deliveries each source has: `inbox_counts`, to which the sweeper adds the rows
 *   received before the `counted_through` mark as it moves the mark along the age index
 *   (`advanceCounts`: a bounded stretch per sweep, each row counted once), and from which retention
 *   takes what it deletes (store/d1/sweep.ts); plus the rows past the mark, counted in the index;
 * - received per hour: `inbox_hours`, added by the same walk, plus the rows past the mark;
 * - received and processing: the partial index of waiting rows (the backlog, small) and the rows
 *   stored since the sweeper's last walk that are still untouched (store/d1/fresh.ts);
 * - failed: the partial index of failed rows;
 * - filtered: the partial index of filtered rows (migrations/0013, store/filtered.ts);
 * - unhandled: `inbox_counts.unhandled`, kept exact by triggers (migrations/0008) and retention;
 * - done: what is left of the total.
 * - duplicates: `inbox_counts.duplicates`, counted when a duplicate is answered (migrations/0009);
 * None of these is a write on the hot path (an unhandled delivery pays one row for its count).
 * While the rows counted live are few (LIVE_OVERVIEW_ROWS: a first run, a demo, a quiet inbox),
 * every read puts the overview together afresh, so that it never contradicts the list page. Past
 * that, put together (`refreshOverview`), they are kept as one snapshot in `inbox_marks` and served
 * from there for up to OVERVIEW_MAX_AGE_MS; the oldest waiting delivery is read live (the first
 * entry of the waiting index, or the first untouched row: fresh.ts).
 */
import { isoTime } from "../clock";
import { FILTERED_SQL } from "../filtered";
import { OLDEST_UNFINISHED_SQL, UNTOUCHED_FROM, untouchedScan, WAITING_SQL } from "./fresh";
import { COUNTED_MARK_SQL } from "./marks";
import {
  assembleSnapshot,
  COUNT_LAG_MS,
  COUNT_WALK_LIMIT,
  COUNTED_THROUGH,
  firstHourMs,
  freshSnapshot,
  HOUR_MS,
  hourKey,
  HOURS_KEPT,
  LIVE_OVERVIEW_ROWS,
  OVERVIEW_MARK,
  withOldestWaiting,
  type Overview,
  type Snapshot,
} from "../snapshot";

// The model is shared by both stores (store/snapshot.ts); named here too for the D1 store's callers and tests.
export { COUNT_LAG_MS, COUNT_WALK_LIMIT, COUNTED_THROUGH, OVERVIEW_MARK, OVERVIEW_MAX_AGE_MS, type HourCount, type Overview } from "../snapshot";

export { COUNTED_MARK_SQL } from "./marks";
const MARK = COUNTED_MARK_SQL;

/**
 * The statements, exported so that a test can `EXPLAIN QUERY PLAN` them: each reads an index or a
 * small table, never the deliveries table as a whole.
 */
export const OVERVIEW_SQL = {
  counted: "SELECT source, total, unhandled, duplicates FROM inbox_counts",
  /**
   * The rows past the mark, by source: a range of the age index. Named, because the planner,
   * not knowing how few rows are past the mark, would rather walk the table in source order.
   */
  tail: `SELECT source, COUNT(*) AS n FROM deliveries INDEXED BY deliveries_by_age WHERE received_at >= ${MARK} GROUP BY source`,
  tailHours: `SELECT substr(received_at, 1, 13) AS hour, COUNT(*) AS n FROM deliveries INDEXED BY deliveries_by_age WHERE received_at >= ${MARK} GROUP BY 1`,
  hours: "SELECT hour, received AS n FROM inbox_hours WHERE hour >= ?1",
  /**
   * Received and processing: the waiting index, and the untouched rows past the walk's mark
   * (store/d1/fresh.ts: the rows stored since the oldest delivery in flight at the last sweep,
   * nearly all done), each row of that stretch looked at. That is the one read of the stretch that
   * is not bounded, and it runs only where the overview is put together: while the live rows are
   * few (LIVE_ROWS_SQL bounds the stretch's entries), or for the snapshot, at most once a minute.
   * A long stretch is a backlog (its rows are the ones to count) or a sweeper that has stopped.
   */
  pending: `SELECT source, status, SUM(n) AS n FROM (
      SELECT source, status, COUNT(*) AS n FROM deliveries INDEXED BY deliveries_waiting WHERE ${WAITING_SQL} GROUP BY source, status
      UNION ALL
      SELECT source, status, COUNT(*) AS n ${UNTOUCHED_FROM} GROUP BY source, status)
    GROUP BY source, status`,
  // The partial indexes, named for the same reason (each WHERE repeats its index's term, as SQLite requires).
  failed: "SELECT source, COUNT(*) AS n FROM deliveries INDEXED BY deliveries_failed WHERE status = 'failed' GROUP BY source",
  failedHours: "SELECT substr(received_at, 1, 13) AS hour, COUNT(*) AS n FROM deliveries INDEXED BY deliveries_failed WHERE status = 'failed' AND received_at >= ?1 GROUP BY 1",
  filtered: `SELECT source, COUNT(*) AS n FROM deliveries INDEXED BY deliveries_filtered WHERE ${FILTERED_SQL} GROUP BY source`,
} as const;

/**
 * How many rows a fresh overview would count live (past the walk's mark, unfinished, failed), each
 * part bounded by `?1` (its LIMIT): what decides whether a read puts it together afresh
 * (LIVE_OVERVIEW_ROWS). Each reads its index, as the parts above.
 */
export const LIVE_ROWS_SQL = `SELECT
    (SELECT COUNT(*) FROM (SELECT 1 FROM deliveries INDEXED BY deliveries_by_age WHERE received_at >= ${MARK} LIMIT ?1))
    + (SELECT COUNT(*) FROM (SELECT 1 FROM deliveries INDEXED BY deliveries_waiting WHERE ${WAITING_SQL} LIMIT ?1))
    + (SELECT COUNT(*) FROM ${untouchedScan("?1", "1")})
    + (SELECT COUNT(*) FROM (SELECT 1 FROM deliveries INDEXED BY deliveries_failed WHERE status = 'failed' LIMIT ?1))
    + (SELECT COUNT(*) FROM (SELECT 1 FROM deliveries INDEXED BY deliveries_filtered WHERE ${FILTERED_SQL} LIMIT ?1)) AS n`;

/** The walk's statements, for `EXPLAIN QUERY PLAN` too. `?1`: the mark as read, `?2`: the new mark. */
export const COUNT_SQL = {
  /** The `received_at` of the row `?3` rows past the mark, when that is before `?2`. */
  stretchEnd: "SELECT received_at FROM deliveries WHERE received_at >= ?1 AND received_at < ?2 ORDER BY received_at LIMIT 1 OFFSET ?3",
  /** The first `received_at` after `?1` (a stretch of more than the limit of rows received the same millisecond). */
  nextAfter: "SELECT MIN(received_at) AS next FROM deliveries WHERE received_at > ?1 AND received_at < ?2",
  /** Each is a no-op unless the mark is still `?1`: two sweeps at once count a stretch once. */
  addCounts: `INSERT INTO inbox_counts (source, total)
    SELECT source, COUNT(*) FROM deliveries WHERE received_at >= ?1 AND received_at < ?2 AND ${MARK} = ?1 GROUP BY source
    ON CONFLICT (source) DO UPDATE SET total = total + excluded.total`,
  addHours: `INSERT INTO inbox_hours (hour, received)
    SELECT substr(received_at, 1, 13), COUNT(*) FROM deliveries WHERE received_at >= ?1 AND received_at < ?2 AND ${MARK} = ?1 GROUP BY 1
    ON CONFLICT (hour) DO UPDATE SET received = received + excluded.received`,
  moveMark: `INSERT INTO inbox_marks (name, value) SELECT '${COUNTED_THROUGH}', ?2 WHERE ${MARK} = ?1
    ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
  dropOldHours: "DELETE FROM inbox_hours WHERE hour < ?1",
} as const;

/**
 * Moves the `counted_through` mark up to COUNT_WALK_LIMIT rows along the age index (never closer
 * to `nowMs` than COUNT_LAG_MS), adding what it passes to `inbox_counts` and `inbox_hours`, in one
 * transaction. Returns how far it got (the new mark), or null when there was nothing to count.
 */
export async function advanceCounts(db: D1Database, nowMs: number, limit = COUNT_WALK_LIMIT): Promise<string | null> {
  const cutoff = isoTime(nowMs - COUNT_LAG_MS);
  const from = (await db.prepare(`SELECT ${MARK} AS mark`).first<{ mark: string }>())?.mark ?? "";
  if (from >= cutoff) return null;
  let to = (await db.prepare(COUNT_SQL.stretchEnd).bind(from, cutoff, limit).first<{ received_at: string }>())?.received_at ?? cutoff;
  if (to <= from) to = (await db.prepare(COUNT_SQL.nextAfter).bind(from, cutoff).first<{ next: string | null }>())?.next ?? cutoff;
  await db.batch([
    db.prepare(COUNT_SQL.addCounts).bind(from, to),
    db.prepare(COUNT_SQL.addHours).bind(from, to),
    db.prepare(COUNT_SQL.moveMark).bind(from, to),
    db.prepare(COUNT_SQL.dropOldHours).bind(hourKey(nowMs - HOURS_KEPT * HOUR_MS)),
  ]);
  return to;
}

/** Puts the snapshot together from the counts and the small indexes (one read transaction), and stores it. */
export async function refreshOverview(db: D1Database, nowMs: number): Promise<Snapshot> {
  const snapshot = await putTogether(db, nowMs);
  await db
    .prepare("INSERT INTO inbox_marks (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET value = excluded.value")
    .bind(OVERVIEW_MARK, JSON.stringify(snapshot))
    .run();
  return snapshot;
}

/** The snapshot at `nowMs` from the counts and the small indexes, in one read transaction; nothing written. */
async function putTogether(db: D1Database, nowMs: number): Promise<Snapshot> {
  const first = firstHourMs(nowMs);
  const results = await db.batch([
    db.prepare(OVERVIEW_SQL.counted),
    db.prepare(OVERVIEW_SQL.tail),
    db.prepare(OVERVIEW_SQL.tailHours),
    db.prepare(OVERVIEW_SQL.hours).bind(hourKey(first)),
    db.prepare(OVERVIEW_SQL.pending),
    db.prepare(OVERVIEW_SQL.failed),
    db.prepare(OVERVIEW_SQL.failedHours).bind(isoTime(first)),
    db.prepare(OVERVIEW_SQL.filtered),
  ]);
  const rows = <T>(index: number) => results[index]!.results as T[];
  return assembleSnapshot(
    { counted: rows(0), tail: rows(1), tailHours: rows(2), hours: rows(3), pending: rows(4), failed: rows(5), failedHours: rows(6), filtered: rows(7) },
    nowMs,
  );
}

/**
 * The overview: put together afresh while that is cheap (at most `liveLimit` rows to count live,
 * LIVE_OVERVIEW_ROWS), without storing it; else the stored snapshot while it is younger than
 * OVERVIEW_MAX_AGE_MS, else a fresh one, stored (see `refreshOverview`). The oldest waiting
 * delivery is read live. One batch of three reads decides.
 * @example
 * const { counts, last24h } = await readOverview(env.DB, Date.now());
 */
export async function readOverview(db: D1Database, nowMs: number, liveLimit = LIVE_OVERVIEW_ROWS): Promise<Overview> {
  const [stored, oldest, live] = await db.batch([
    db.prepare("SELECT value FROM inbox_marks WHERE name = ?1").bind(OVERVIEW_MARK),
    db.prepare(OLDEST_UNFINISHED_SQL),
    db.prepare(LIVE_ROWS_SQL).bind(liveLimit + 1),
  ]);
  const cheap = ((live!.results[0] as { n: number } | undefined)?.n ?? 0) <= liveLimit;
  const snapshot = cheap
    ? await putTogether(db, nowMs)
    : (freshSnapshot((stored!.results[0] as { value: string } | undefined)?.value, nowMs) ?? (await refreshOverview(db, nowMs)));
  return withOldestWaiting(snapshot, (oldest!.results[0] as { oldest: string | null } | undefined)?.oldest ?? null, nowMs);
}

/** The sweeper's part: count what the walk has not, and put a snapshot together when the last is stale. */
export async function maintainOverview(db: D1Database, nowMs: number): Promise<void> {
  await advanceCounts(db, nowMs);
  const stored = await db.prepare("SELECT value FROM inbox_marks WHERE name = ?1").bind(OVERVIEW_MARK).first<{ value: string }>();
  if (!freshSnapshot(stored?.value, nowMs)) await refreshOverview(db, nowMs);
}
