/**
 * The overview's numbers (the dashboard's first page and `/admin/metrics`) without counting the
 * table per request: D1 runs one query at a time, so a dashboard left open and a scrape every 15 s
 * must not each walk a million rows while providers wait for their 200.
 *
 * Where each number comes from (migrations/0008):
 * - how many deliveries each source has: `inbox_counts`, to which the sweeper adds the rows
 *   received before the `counted_through` mark as it moves the mark along the age index
 *   (`advanceCounts`: a bounded stretch per sweep, each row counted once), and from which retention
 *   takes what it deletes (store/sweep.ts); plus the rows past the mark, counted in the index;
 * - received per hour: `inbox_hours`, added by the same walk, plus the rows past the mark;
 * - received and processing: the partial index of unfinished rows (the backlog, small);
 * - failed: the partial index of failed rows;
 * - unhandled: `inbox_counts.unhandled`, kept exact by triggers (migrations/0008) and retention;
 * - done: what is left of the total.
 * None of these is a write on the hot path (an unhandled delivery pays one row for its count).
 * Put together (`refreshOverview`), they are kept as one snapshot in `inbox_marks` and served from
 * there for up to OVERVIEW_MAX_AGE_MS; the oldest waiting delivery is read live (the first entry of
 * the partial index).
 */
import { DELIVERY_STATUSES, type DeliveryStatus, type StatusCounts } from "./admin";
import { isoTime } from "./clock";
import { markSql } from "./marks";

/** The `inbox_marks` row up to which (a `received_at`, exclusive) rows are in `inbox_counts` and `inbox_hours`. */
export const COUNTED_THROUGH = "counted_through";
/** The `inbox_marks` row holding the last snapshot (JSON). */
export const OVERVIEW_MARK = "overview";
/** A snapshot is served for this long, then put together again by whoever reads it next (or the sweeper). */
export const OVERVIEW_MAX_AGE_MS = 60_000;
/** Rows counted per sweep at most: a database upgraded with a million rows catches up over a few sweeps. */
export const COUNT_WALK_LIMIT = 50_000;
/**
 * The walk stays this far behind the clock: a row's `received_at` is its receiver's clock, and it
 * lands a little later (group commit), so the newest rows are counted live until they are settled in place.
 */
export const COUNT_LAG_MS = 120_000;
/** Hours of `inbox_hours` kept: the chart shows 24. */
const HOURS_KEPT = 48;

export interface HourCount {
  /** The start of the hour, ISO (UTC). */
  readonly hour: string;
  readonly received: number;
  /** Deliveries received in that hour that are failed now. */
  readonly failed: number;
}

export interface Overview {
  /** When the snapshot was put together (ISO). */
  readonly asOf: string;
  readonly counts: StatusCounts;
  readonly bySource: Record<string, StatusCounts>;
  /** Done deliveries that no handler matched. */
  readonly unhandled: number;
  /** Age of the oldest received or processing delivery (read live), whole seconds; null when none waits. */
  readonly oldestWaitingSeconds: number | null;
  /** Deliveries received in the last 24 hours (the 24 hours of `hourly`), how many of them failed. */
  readonly last24h: { readonly received: number; readonly failed: number; readonly failureRate: number | null };
  /** The last 24 hours, oldest first, the current one last. */
  readonly hourly: readonly HourCount[];
}

/** The snapshot as stored (without the live oldest waiting). */
type Snapshot = Omit<Overview, "oldestWaitingSeconds">;

/** The `counted_through` mark as an SQL expression ('' before the first walk). */
export const COUNTED_MARK_SQL = markSql(COUNTED_THROUGH);
const MARK = COUNTED_MARK_SQL;
const OLDEST_WAITING_SQL = "SELECT MIN(received_at) AS oldest FROM deliveries WHERE status IN ('received', 'processing')";

/**
 * The statements, exported so that a test can `EXPLAIN QUERY PLAN` them: each reads an index or a
 * small table, never the deliveries table as a whole.
 */
export const OVERVIEW_SQL = {
  counted: "SELECT source, total, unhandled FROM inbox_counts",
  /**
   * The rows past the mark, by source: a range of the age index. Named, because the planner,
   * not knowing how few rows are past the mark, would rather walk the table in source order.
   */
  tail: `SELECT source, COUNT(*) AS n FROM deliveries INDEXED BY deliveries_by_age WHERE received_at >= ${MARK} GROUP BY source`,
  tailHours: `SELECT substr(received_at, 1, 13) AS hour, COUNT(*) AS n FROM deliveries INDEXED BY deliveries_by_age WHERE received_at >= ${MARK} GROUP BY 1`,
  hours: "SELECT hour, received AS n FROM inbox_hours WHERE hour >= ?1",
  // The partial indexes, named for the same reason (each WHERE repeats its index's term, as SQLite requires).
  pending: "SELECT source, status, COUNT(*) AS n FROM deliveries INDEXED BY deliveries_pending WHERE status IN ('received', 'processing') GROUP BY source, status",
  failed: "SELECT source, COUNT(*) AS n FROM deliveries INDEXED BY deliveries_failed WHERE status = 'failed' GROUP BY source",
  failedHours: "SELECT substr(received_at, 1, 13) AS hour, COUNT(*) AS n FROM deliveries INDEXED BY deliveries_failed WHERE status = 'failed' AND received_at >= ?1 GROUP BY 1",
} as const;

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

/** The hour of an ISO time as `inbox_hours` keys it: `YYYY-MM-DDTHH`. */
const hourKey = (ms: number) => isoTime(ms).slice(0, 13);

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
    db.prepare(COUNT_SQL.dropOldHours).bind(hourKey(nowMs - HOURS_KEPT * 3_600_000)),
  ]);
  return to;
}

function zeroCounts(): StatusCounts {
  return { received: 0, processing: 0, done: 0, failed: 0 };
}

/** Puts the snapshot together from the counts and the small indexes (one read transaction), and stores it. */
export async function refreshOverview(db: D1Database, nowMs: number): Promise<Snapshot> {
  const firstHourMs = Math.floor(nowMs / 3_600_000) * 3_600_000 - 23 * 3_600_000;
  const firstHour = hourKey(firstHourMs);
  const results = await db.batch([
    db.prepare(OVERVIEW_SQL.counted),
    db.prepare(OVERVIEW_SQL.tail),
    db.prepare(OVERVIEW_SQL.tailHours),
    db.prepare(OVERVIEW_SQL.hours).bind(firstHour),
    db.prepare(OVERVIEW_SQL.pending),
    db.prepare(OVERVIEW_SQL.failed),
    db.prepare(OVERVIEW_SQL.failedHours).bind(isoTime(firstHourMs)),
  ]);
  const rows = <T>(index: number) => results[index]!.results as T[];
  const totals = new Map<string, number>();
  let unhandled = 0;
  for (const { source, total, unhandled: n } of rows<{ source: string; total: number; unhandled: number }>(0)) {
    totals.set(source, total);
    unhandled += n;
  }
  for (const { source, n } of rows<{ source: string; n: number }>(1)) totals.set(source, (totals.get(source) ?? 0) + n);

  const bySource: Record<string, StatusCounts> = {};
  const of = (source: string) => (bySource[source] ??= zeroCounts());
  for (const { source, status, n } of rows<{ source: string; status: DeliveryStatus; n: number }>(4)) of(source)[status] = n;
  for (const { source, n } of rows<{ source: string; n: number }>(5)) of(source).failed = n;
  for (const [source, total] of totals) {
    const counts = of(source);
    // What is neither waiting nor failed is done. Never below zero, should a count lag a deletion.
    counts.done = Math.max(0, total - counts.received - counts.processing - counts.failed);
  }
  const counts = zeroCounts();
  for (const each of Object.values(bySource)) for (const status of DELIVERY_STATUSES) counts[status] += each[status];

  const received = new Map<string, number>();
  for (const { hour, n } of [...rows<{ hour: string; n: number }>(3), ...rows<{ hour: string; n: number }>(2)]) {
    if (hour >= firstHour) received.set(hour, (received.get(hour) ?? 0) + n);
  }
  const failed = new Map(rows<{ hour: string; n: number }>(6).map(({ hour, n }) => [hour, n]));
  const hourly = Array.from({ length: 24 }, (_, index) => {
    const key = hourKey(firstHourMs + index * 3_600_000);
    return { hour: `${key}:00:00.000Z`, received: received.get(key) ?? 0, failed: failed.get(key) ?? 0 };
  });
  const received24 = hourly.reduce((sum, hour) => sum + hour.received, 0);
  const failed24 = hourly.reduce((sum, hour) => sum + hour.failed, 0);
  const snapshot: Snapshot = {
    asOf: isoTime(nowMs),
    counts,
    bySource,
    unhandled,
    last24h: { received: received24, failed: failed24, failureRate: received24 === 0 ? null : failed24 / received24 },
    hourly,
  };
  await db
    .prepare("INSERT INTO inbox_marks (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET value = excluded.value")
    .bind(OVERVIEW_MARK, JSON.stringify(snapshot))
    .run();
  return snapshot;
}

/**
 * The overview: the stored snapshot while it is younger than OVERVIEW_MAX_AGE_MS, else a fresh one
 * (see `refreshOverview`); the oldest waiting delivery read live. Two reads when the snapshot is fresh.
 * @example
 * const { counts, last24h } = await readOverview(env.DB, Date.now());
 */
export async function readOverview(db: D1Database, nowMs: number): Promise<Overview> {
  const [stored, oldest] = await db.batch([
    db.prepare("SELECT value FROM inbox_marks WHERE name = ?1").bind(OVERVIEW_MARK),
    db.prepare(OLDEST_WAITING_SQL),
  ]);
  const snapshot = freshSnapshot((stored!.results[0] as { value: string } | undefined)?.value, nowMs) ?? (await refreshOverview(db, nowMs));
  const oldestAt = (oldest!.results[0] as { oldest: string | null } | undefined)?.oldest ?? null;
  return { ...snapshot, oldestWaitingSeconds: oldestAt === null ? null : Math.max(0, Math.floor((nowMs - Date.parse(oldestAt)) / 1000)) };
}

/** The sweeper's part: count what the walk has not, and put a snapshot together when the last is stale. */
export async function maintainOverview(db: D1Database, nowMs: number): Promise<void> {
  await advanceCounts(db, nowMs);
  const stored = await db.prepare("SELECT value FROM inbox_marks WHERE name = ?1").bind(OVERVIEW_MARK).first<{ value: string }>();
  if (!freshSnapshot(stored?.value, nowMs)) await refreshOverview(db, nowMs);
}

/** The stored snapshot while it is younger than OVERVIEW_MAX_AGE_MS at `nowMs`; null when none is, or it is unreadable. */
function freshSnapshot(value: string | undefined, nowMs: number): Snapshot | null {
  if (value === undefined) return null;
  let parsed: Snapshot;
  try {
    parsed = JSON.parse(value) as Snapshot;
  } catch {
    return null;
  }
  if (typeof parsed.asOf !== "string" || !parsed.counts || !parsed.hourly) return null;
  return nowMs - Date.parse(parsed.asOf) < OVERVIEW_MAX_AGE_MS ? parsed : null;
}
