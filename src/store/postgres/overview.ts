/**
 * The overview's numbers in Postgres (the dashboard's first page and `/admin/metrics`), put
 * together as the D1 store does (store/d1/overview.ts says where each number comes from): the counts
 * the sweeper's walk carried into `inbox_counts` and `inbox_hours`, the rows past its mark counted
 * in the age index, the partial indexes for the unfinished and the failed, the trigger-kept
 * unhandled and duplicate counts; put together afresh on every read while few rows are counted live
 * (LIVE_OVERVIEW_ROWS), else kept as one snapshot in `inbox_marks` and served from there for up to
 * OVERVIEW_MAX_AGE_MS. Postgres runs many queries at once, but a poll that counted the table would
 * still read it all, every few seconds, per open dashboard: the design stays.
 *
 * Where Postgres differs:
 * - the walk's guard. D1 runs one statement at a time, so each of its statements only had to check
 *   that the mark had not moved. Here two sweeps can walk at once, retention can delete rows a walk
 *   is counting, and a receiver's insert can be in flight with the mark it read; so a walk counts in
 *   a short transaction that holds the mark's row lock (`lockCountedMark`), which inserts and
 *   retention's deletion (postgres/sweep.ts) take too, and it counts what it sees after taking it.
 * - the snapshot's reads are one statement (one snapshot of the database), as D1's batch was one
 *   transaction: the counted totals and the rows past the mark agree even while a walk commits.
 */
import type { DeliveryStatus } from "../deliveries";
import { isoTime } from "../clock";
import { FILTERED_SQL } from "../filtered";
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
import { ownTransaction, type Queryable } from "./queryable";

/** The `counted_through` mark as an SQL expression ('' before the first walk). */
const MARK = `(SELECT coalesce((SELECT value FROM inbox_marks WHERE name = '${COUNTED_THROUGH}'), ''))`;
const OLDEST_WAITING = "(SELECT min(received_at) FROM deliveries WHERE status IN ('received', 'processing'))";

/**
 * The snapshot's parts (exported so that a test can EXPLAIN them), each read from an index or a
 * small table, run as one UNION ALL: `part` says which, `key` is a source or an hour
 * (`YYYY-MM-DDTHH`). `$1`: the first hour of the chart, `$2`: the same as an ISO time.
 */
export const OVERVIEW_PARTS = {
  counted: "SELECT 'counted' AS part, source AS key, NULL AS status, total AS n, unhandled, duplicates FROM inbox_counts",
  // The rows past the mark: a range of the age index.
  tail: `SELECT 'tail', source, NULL, count(*), NULL, NULL FROM deliveries WHERE received_at >= ${MARK} GROUP BY source`,
  tailHours: `SELECT 'tailHours', left(received_at, 13), NULL, count(*), NULL, NULL FROM deliveries WHERE received_at >= ${MARK} GROUP BY 2`,
  hours: "SELECT 'hours', hour, NULL, received, NULL, NULL FROM inbox_hours WHERE hour >= $1",
  // The partial indexes: each WHERE repeats its index's predicate.
  pending: "SELECT 'pending', source, status, count(*), NULL, NULL FROM deliveries WHERE status IN ('received', 'processing') GROUP BY source, status",
  failed: "SELECT 'failed', source, NULL, count(*), NULL, NULL FROM deliveries WHERE status = 'failed' GROUP BY source",
  failedHours: "SELECT 'failedHours', left(received_at, 13), NULL, count(*), NULL, NULL FROM deliveries WHERE status = 'failed' AND received_at >= $2 GROUP BY 2",
  filtered: `SELECT 'filtered', source, NULL, count(*), NULL, NULL FROM deliveries WHERE ${FILTERED_SQL} GROUP BY source`,
} as const;
export const OVERVIEW_SQL = Object.values(OVERVIEW_PARTS).join("\nUNION ALL ");

/** The walk's statements, for EXPLAIN too. `$1`: the mark as read, `$2`: the cutoff or the new mark. */
export const COUNT_SQL = {
  /** The `received_at` of the row `$3` rows past the mark, when that is before `$2`. */
  stretchEnd: "SELECT received_at FROM deliveries WHERE received_at >= $1 AND received_at < $2 ORDER BY received_at LIMIT 1 OFFSET $3",
  /** The first `received_at` after `$1` (a stretch of more than the limit of rows received the same millisecond). */
  nextAfter: "SELECT min(received_at) AS next FROM deliveries WHERE received_at > $1 AND received_at < $2",
  /**
   * The stretch [$1, $2) added to the totals and the hours (only the hours from `$3` on are kept,
   * older ones dropped), and the mark moved to `$2`: one statement, so the totals, the hours and the
   * mark move together and count the same rows. The caller holds the mark's lock.
   */
  count: `WITH stretch AS (
      SELECT source, left(received_at, 13) AS hour FROM deliveries WHERE received_at >= $1 AND received_at < $2),
    totals AS (
      INSERT INTO inbox_counts AS counts (source, total) SELECT source, count(*) FROM stretch GROUP BY source
      ON CONFLICT (source) DO UPDATE SET total = counts.total + excluded.total),
    hours AS (
      INSERT INTO inbox_hours AS hours (hour, received) SELECT hour, count(*) FROM stretch WHERE hour >= $3 GROUP BY hour
      ON CONFLICT (hour) DO UPDATE SET received = hours.received + excluded.received),
    dropped AS (DELETE FROM inbox_hours WHERE hour < $3)
    UPDATE inbox_marks SET value = $2 WHERE name = '${COUNTED_THROUGH}'`,
} as const;

/**
 * Locks the `counted_through` mark's row until the end of the caller's transaction and returns its
 * value ('' before the first walk): `UPDATE` for a walk, `SHARE` for retention's deletion. The row
 * is made on first use, so that there is always a row to lock (D1 needs none: it runs one statement
 * at a time); '' reads as the absent mark does everywhere.
 *
 * A walk takes `FOR UPDATE`, not the weaker lock its UPDATE of the value would take: the receiver's
 * insert reads the mark `FOR KEY SHARE` (postgres/record.ts), which only `FOR UPDATE` waits for and
 * makes wait. So no insert is in flight with the old mark while a walk counts: each lands either
 * before the walk's count (and is counted) or after its commit (and is dated at the new mark).
 * Retention's `SHARE` holds up no insert.
 */
export async function lockCountedMark(q: Queryable, mode: "UPDATE" | "SHARE"): Promise<string> {
  const select = `SELECT value FROM inbox_marks WHERE name = '${COUNTED_THROUGH}' FOR ${mode}`;
  let { rows } = await q.query<{ value: string }>(select);
  if (rows.length === 0) {
    // Another transaction making it at the same moment: this waits for it, then inserts nothing.
    await q.query(`INSERT INTO inbox_marks (name, value) VALUES ('${COUNTED_THROUGH}', '') ON CONFLICT (name) DO NOTHING`);
    ({ rows } = await q.query<{ value: string }>(select));
  }
  return rows[0]!.value;
}

/**
 * Moves the `counted_through` mark up to `limit` rows along the age index (never closer to `nowMs`
 * than COUNT_LAG_MS), adding what it passes to `inbox_counts` and `inbox_hours`. Returns how far the
 * count got (the mark as this call leaves it), or null when there was nothing to count.
 *
 * The stretch is measured first, with no lock; then one short transaction locks the mark
 * (`lockCountedMark`: the receiver's inserts wait while it is held), checks that no other walk moved
 * it meanwhile, and counts the stretch in one statement, which sees every insert that landed before
 * the lock. When another walk moved the mark, this one counts nothing and returns where that one
 * left it: two walks at once count each stretch once. `q` must not be in a transaction already.
 * @example
 * while ((await advanceCounts(client, Date.now())) !== null);
 */
export async function advanceCounts(q: Queryable, nowMs: number, limit = COUNT_WALK_LIMIT): Promise<string | null> {
  const cutoff = isoTime(nowMs - COUNT_LAG_MS);
  const from = (await q.query<{ mark: string }>(`SELECT ${MARK} AS mark`)).rows[0]!.mark;
  if (from >= cutoff) return null;
  let to = (await q.query<{ received_at: string }>(COUNT_SQL.stretchEnd, [from, cutoff, limit])).rows[0]?.received_at ?? cutoff;
  if (to <= from) to = (await q.query<{ next: string | null }>(COUNT_SQL.nextAfter, [from, cutoff])).rows[0]?.next ?? cutoff;
  return ownTransaction(q, async () => {
    const mark = await lockCountedMark(q, "UPDATE");
    if (mark !== from) return mark;
    await q.query(COUNT_SQL.count, [from, to, hourKey(nowMs - HOURS_KEPT * HOUR_MS)]);
    return to;
  });
}

type Part = keyof typeof OVERVIEW_PARTS;

/**
 * Puts the snapshot together from the counts and the small indexes (one statement), and stores it.
 * Two at once both store theirs; either is a true snapshot.
 * @example
 * const { counts } = await refreshOverview(client, Date.now());
 */
export async function refreshOverview(q: Queryable, nowMs: number): Promise<Snapshot> {
  const snapshot = await putTogether(q, nowMs);
  await q.query("INSERT INTO inbox_marks (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value", [OVERVIEW_MARK, JSON.stringify(snapshot)]);
  return snapshot;
}

/** The snapshot at `nowMs` from the counts and the small indexes, in one statement; nothing written. */
async function putTogether(q: Queryable, nowMs: number): Promise<Snapshot> {
  const first = firstHourMs(nowMs);
  const { rows } = await q.query<{ part: Part; key: string; status: DeliveryStatus | null; n: string; unhandled: string | null; duplicates: string | null }>(OVERVIEW_SQL, [
    hourKey(first),
    isoTime(first),
  ]);
  // bigint counts come as strings.
  const part = (name: Part) => rows.filter((row) => row.part === name);
  const bySource = (name: Part) => part(name).map((row) => ({ source: row.key, n: Number(row.n) }));
  const byHour = (name: Part) => part(name).map((row) => ({ hour: row.key, n: Number(row.n) }));
  return assembleSnapshot(
    {
      counted: part("counted").map((row) => ({ source: row.key, total: Number(row.n), unhandled: Number(row.unhandled ?? 0), duplicates: Number(row.duplicates ?? 0) })),
      tail: bySource("tail"),
      hours: byHour("hours"),
      tailHours: byHour("tailHours"),
      pending: part("pending").map((row) => ({ source: row.key, status: row.status!, n: Number(row.n) })),
      failed: bySource("failed"),
      failedHours: byHour("failedHours"),
      filtered: bySource("filtered"),
    },
    nowMs,
  );
}

/**
 * How many rows a fresh overview would count live (past the walk's mark, unfinished, failed), each
 * part bounded by `$2` (its LIMIT): what decides whether a read puts it together afresh.
 */
export const LIVE_ROWS_SQL = `(SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE received_at >= ${MARK} LIMIT $2) AS tail)
  + (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE status IN ('received', 'processing') LIMIT $2) AS pending)
  + (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE status = 'failed' LIMIT $2) AS failed)
  + (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE ${FILTERED_SQL} LIMIT $2) AS filtered)`;

/**
 * The overview: put together afresh while that is cheap (at most `liveLimit` rows to count live,
 * LIVE_OVERVIEW_ROWS), without storing it; else the stored snapshot while it is younger than
 * OVERVIEW_MAX_AGE_MS, else a fresh one, stored (see `refreshOverview`). The oldest waiting
 * delivery is read live. One statement decides.
 * @example
 * const { counts, last24h } = await readOverview(client, Date.now());
 */
export async function readOverview(q: Queryable, nowMs: number, liveLimit = LIVE_OVERVIEW_ROWS): Promise<Overview> {
  const { rows } = await q.query<{ snapshot: string | null; oldest: string | null; live: string }>(
    `SELECT (SELECT value FROM inbox_marks WHERE name = $1) AS snapshot, ${OLDEST_WAITING} AS oldest, ${LIVE_ROWS_SQL} AS live`,
    [OVERVIEW_MARK, liveLimit + 1],
  );
  const { snapshot: stored = null, oldest = null, live = "0" } = rows[0] ?? {};
  const snapshot = Number(live) <= liveLimit ? await putTogether(q, nowMs) : (freshSnapshot(stored, nowMs) ?? (await refreshOverview(q, nowMs)));
  return withOldestWaiting(snapshot, oldest, nowMs);
}

/**
 * The sweeper's part: count what the walk has not, and put a snapshot together when the last is
 * stale. `q` must not be in a transaction already (the walk opens its own).
 * @example
 * await maintainOverview(client, Date.now());
 */
export async function maintainOverview(q: Queryable, nowMs: number): Promise<void> {
  await advanceCounts(q, nowMs);
  const { rows } = await q.query<{ value: string }>("SELECT value FROM inbox_marks WHERE name = $1", [OVERVIEW_MARK]);
  if (!freshSnapshot(rows[0]?.value ?? null, nowMs)) await refreshOverview(q, nowMs);
}
