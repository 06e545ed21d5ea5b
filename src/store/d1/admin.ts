/**
 * What the admin API and the dashboard read of deliveries in D1: the exact counts, one delivery
 * whole (their shapes are in store/deliveries.ts). The listing is in listing.ts, the replay reset in replay.ts.
 *
 * Reads never touch the lease columns.
 */
import type { DeliveryRef } from "../../delivery-ref";
import { attemptLogFromColumn } from "../attempts";
import { bodyColumns, bodyFromRow } from "./columns";
import { RUN_COLUMNS, SUMMARY_COLUMNS, toRun, toSummary, zeroCounts, sumSubscriberCounts, type DeliveryDetail, type SubscriberCount, type DeliveryRow, type DeliveryStats, type DeliveryStatus, type StatusCounts } from "../deliveries";
import { FILTERED_SQL } from "../filtered";
import { OLDEST_UNFINISHED_SQL } from "./fresh";
import { headersFromColumn } from "../headers";

/**
 * Counts by status and source, and the age of the oldest waiting delivery, in one round trip.
 * @example
 * const { counts, oldestWaitingSeconds } = await deliveryStats(env.DB, Date.now());
 */
export async function deliveryStats(db: D1Database, nowMs: number): Promise<DeliveryStats> {
  const [groups, oldest] = await db.batch([
    db.prepare(
      // A filtered delivery is a done row without `handled` (store/filtered.ts): counted as filtered.
      `SELECT source, CASE WHEN ${FILTERED_SQL} THEN 'filtered' ELSE status END AS status, COUNT(*) AS n, SUM(status = 'done' AND handled = 0) AS unhandled
         FROM deliveries GROUP BY 1, 2`,
    ),
    // The first entry of the waiting index, or the first untouched row past the sweeper's mark (fresh.ts).
    db.prepare(OLDEST_UNFINISHED_SQL),
  ]);
  const counts = zeroCounts();
  const bySource: Record<string, StatusCounts> = {};
  let unhandled = 0;
  for (const group of groups!.results as { source: string; status: DeliveryStatus; n: number; unhandled: number | null }[]) {
    counts[group.status] += group.n;
    (bySource[group.source] ??= zeroCounts())[group.status] = group.n;
    unhandled += group.unhandled ?? 0;
  }
  const oldestAt = (oldest!.results[0] as { oldest: string | null } | undefined)?.oldest ?? null;
  const oldestWaitingSeconds = oldestAt === null ? null : Math.max(0, Math.floor((nowMs - Date.parse(oldestAt)) / 1000));
  return { counts, unhandled, oldestWaitingSeconds, bySource };
}

/** One delivery with its body, headers and attempt history, or null when there is none with that source and id. */
export async function getDelivery(db: D1Database, ref: DeliveryRef): Promise<DeliveryDetail | null> {
  const [delivery, runs] = await db.batch<Record<string, unknown>>([
    db.prepare(`SELECT ${SUMMARY_COLUMNS}, headers, attempt_log, ${bodyColumns()} FROM deliveries WHERE source = ?1 AND id = ?2`).bind(ref.source, ref.id),
    db.prepare(`SELECT ${RUN_COLUMNS} FROM subscriber_runs WHERE source = ?1 AND id = ?2 ORDER BY subscriber`).bind(ref.source, ref.id),
  ]);
  const row = delivery!.results[0] as (DeliveryRow & { headers: string | null; attempt_log: string | null } & Record<string, unknown>) | undefined;
  if (!row) return null;
  return {
    ...toSummary(row),
    body: bodyFromRow(row),
    headers: headersFromColumn(row.headers),
    attemptLog: attemptLogFromColumn(row.attempt_log),
    runs: (runs!.results as unknown as Parameters<typeof toRun>[0][]).map(toRun),
  };
}

/** Failed deliveries by source and subscriber, walking the failed indexes (migrations/0006, 0012). */
export async function failedBySubscriber(db: D1Database): Promise<SubscriberCount[]> {
  const { results } = await db
    .prepare(
      `SELECT source, subscriber, COUNT(*) AS n FROM deliveries INDEXED BY deliveries_failed
        WHERE status = 'failed' AND fanout IS NULL AND subscriber IS NOT NULL GROUP BY source, subscriber
       UNION ALL
       SELECT source, subscriber, COUNT(*) AS n FROM subscriber_runs WHERE status = 'failed' GROUP BY source, subscriber`,
    )
    .all<{ source: string; subscriber: string; n: number }>();
  return sumSubscriberCounts(results);
}
