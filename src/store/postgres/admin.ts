/**
 * What the admin API and the dashboard read of deliveries, in Postgres: the exact counts and one
 * delivery whole, with the same shapes as the D1 store (store/deliveries.ts). The listing is in
 * listing.ts, the replay reset in replay.ts.
 *
 * Reads never touch the lease columns. Where pg's types differ from D1's: `handled` is a boolean
 * (D1: 0/1), a COUNT(*) is a bigint, which pg hands over as a string (cast to int here: a count
 * per source and status stays far below 2^31), and `body` is a bytea, which pg hands over whole
 * (D1 needs hex chunks, store/d1/columns.ts).
 */
import type { DeliveryRef } from "../../delivery-ref";
import { SUMMARY_COLUMNS, toRun, toSummary, zeroCounts, sumSubscriberCounts, type DeliveryDetail, type SubscriberCount, type DeliveryRow, type DeliveryStats, type DeliveryStatus, type StatusCounts } from "../deliveries";
import { attemptLogFromColumn } from "../attempts";
import { FILTERED_SQL } from "../filtered";
import { headersFromColumn } from "../headers";
import { BODY_COLUMNS, bodyFromRow, type BodyRow } from "./body";
import { toNumber } from "./client";
import type { Queryable } from "./queryable";

/**
 * Counts by status and source, and the age of the oldest waiting delivery: a full count of the
 * table, not for polling (the overview is, overview.ts). One statement, so one snapshot: the oldest
 * waiting is an uncorrelated subquery, answered once from the first entry of the partial index of
 * unfinished rows. When the table is empty there is no group, and no waiting delivery either.
 * @example
 * const { counts, oldestWaitingSeconds } = await deliveryStats(client, Date.now());
 */
export async function deliveryStats(q: Queryable, nowMs: number): Promise<DeliveryStats> {
  // count(*) is a bigint, which pg returns as a string: toNumber (an int cast would fail past 2^31 rows).
  const { rows } = await q.query<{ source: string; status: DeliveryStatus; n: string; unhandled: string; oldest: string | null }>(
    // A filtered delivery is a done row without `handled` (store/filtered.ts): counted as filtered.
    `SELECT source, CASE WHEN ${FILTERED_SQL} THEN 'filtered' ELSE status END AS status, count(*) AS n,
            count(*) FILTER (WHERE status = 'done' AND handled = false) AS unhandled,
            (SELECT min(received_at) FROM deliveries WHERE status IN ('received', 'processing')) AS oldest
       FROM deliveries GROUP BY 1, 2`,
  );
  const counts = zeroCounts();
  const bySource: Record<string, StatusCounts> = {};
  let unhandled = 0;
  for (const group of rows) {
    const n = toNumber(group.n);
    counts[group.status] += n;
    (bySource[group.source] ??= zeroCounts())[group.status] = n;
    unhandled += toNumber(group.unhandled);
  }
  const oldestAt = rows[0]?.oldest ?? null;
  const oldestWaitingSeconds = oldestAt === null ? null : Math.max(0, Math.floor((nowMs - Date.parse(oldestAt)) / 1000));
  return { counts, unhandled, oldestWaitingSeconds, bySource };
}

/**
 * One delivery with its body, headers and attempt history, or null when there is none with that
 * source and id. The jsonb columns are read as text (`::text`) and parsed by the D1 store's readers
 * (store/headers.ts, store/attempts.ts), so that both stores accept and drop the same entries.
 * @example
 * const detail = await getDelivery(client, { source: "stripe", id: "evt_1" });
 */
export async function getDelivery(q: Queryable, ref: DeliveryRef): Promise<DeliveryDetail | null> {
  const { rows } = await q.query<DeliveryRow & BodyRow & { headers: string | null; attempt_log: string | null }>(
    `SELECT ${SUMMARY_COLUMNS}, headers::text AS headers, attempt_log::text AS attempt_log, ${BODY_COLUMNS} FROM deliveries WHERE source = $1 AND id = $2`,
    [ref.source, ref.id],
  );
  const row = rows[0];
  if (!row) return null;
  const runs = row.fanout === null ? { rows: [] } : await q.query<Parameters<typeof toRun>[0]>(
    `SELECT subscriber, status, attempts, error, updated_at, attempt_log::text AS attempt_log FROM subscriber_runs WHERE source = $1 AND id = $2 ORDER BY subscriber`,
    [ref.source, ref.id],
  );
  return {
    ...toSummary(row),
    body: bodyFromRow(row),
    headers: headersFromColumn(row.headers),
    attemptLog: attemptLogFromColumn(row.attempt_log),
    runs: runs.rows.map(toRun),
  };
}

/** Failed deliveries by source and subscriber, from the failed indexes (D1's `failedBySubscriber`). */
export async function failedBySubscriber(q: Queryable): Promise<SubscriberCount[]> {
  const { rows } = await q.query<{ source: string; subscriber: string; n: string }>(
    `SELECT source, subscriber, count(*) AS n FROM deliveries WHERE status = 'failed' AND fanout IS NULL AND subscriber IS NOT NULL GROUP BY source, subscriber
     UNION ALL
     SELECT source, subscriber, count(*) AS n FROM subscriber_runs WHERE status = 'failed' GROUP BY source, subscriber`,
  );
  return sumSubscriberCounts(rows);
}
