/**
 * What the admin API and the dashboard read of deliveries: their shapes, the exact counts, one
 * delivery whole. The listing is in listing.ts, the replay reset in replay.ts.
 *
 * Reads never touch the lease columns.
 */
import type { DeliveryRef } from "../delivery-ref";
import { attemptLogFromColumn, type AttemptEntry } from "./attempt-log";
import { bodyColumns, bodyFromRow } from "./columns";
import { headersFromColumn, type StoredHeaders } from "./headers";

export const DELIVERY_STATUSES = ["received", "processing", "done", "failed"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export type StatusCounts = Record<DeliveryStatus, number>;

export function zeroCounts(): StatusCounts {
  return { received: 0, processing: 0, done: 0, failed: 0 };
}

export interface DeliveryStats {
  readonly counts: StatusCounts;
  /** Done deliveries no handler matched (a typo in the registry shows up here). */
  readonly unhandled: number;
  /** Age of the oldest `received`/`processing` delivery, whole seconds; null when none waits. */
  readonly oldestWaitingSeconds: number | null;
  readonly bySource: Record<string, StatusCounts>;
}

/** One delivery as listed: everything but the body and the lease columns. */
export interface DeliverySummary {
  readonly source: string;
  readonly id: string;
  readonly eventType: string | null;
  readonly status: DeliveryStatus;
  readonly attempts: number;
  readonly error: string | null;
  /** On done: true when a handler ran, false when none matched. Null before that. */
  readonly handled: boolean | null;
  readonly receivedAt: string;
  readonly updatedAt: string;
}

/** A summary plus the raw body bytes (null once retention pruned them), its request headers and its attempt history. */
export interface DeliveryDetail extends DeliverySummary {
  readonly body: Uint8Array | null;
  /** The request headers as received, credentials left out (store/headers.ts); null when not stored or cleared with the body. */
  readonly headers: StoredHeaders | null;
  /** Each run and replay, oldest first (store/attempt-log.ts). */
  readonly attemptLog: readonly AttemptEntry[];
}

export interface DeliveryRow {
  source: string;
  id: string;
  event_type: string | null;
  status: DeliveryStatus;
  attempts: number;
  error: string | null;
  /** 1/0 in D1, a boolean in Postgres. */
  handled: number | boolean | null;
  received_at: string;
  updated_at: string;
}

export const SUMMARY_COLUMNS = "source, id, event_type, status, attempts, error, handled, received_at, updated_at";

/** One delivery as listed, from a row of SUMMARY_COLUMNS (either store's). */
export function toSummary(row: DeliveryRow): DeliverySummary {
  return {
    source: row.source,
    id: row.id,
    eventType: row.event_type,
    status: row.status,
    attempts: row.attempts,
    error: row.error,
    handled: row.handled === null ? null : row.handled === true || row.handled === 1,
    receivedAt: row.received_at,
    updatedAt: row.updated_at,
  };
}

/**
 * Counts by status and source, and the age of the oldest waiting delivery, in one round trip.
 * @example
 * const { counts, oldestWaitingSeconds } = await deliveryStats(env.DB, Date.now());
 */
export async function deliveryStats(db: D1Database, nowMs: number): Promise<DeliveryStats> {
  const [groups, oldest] = await db.batch([
    db.prepare(
      `SELECT source, status, COUNT(*) AS n, SUM(status = 'done' AND handled = 0) AS unhandled
         FROM deliveries GROUP BY source, status`,
    ),
    // One MIN, answered from the first entry of the partial index of unfinished rows.
    db.prepare(`SELECT MIN(received_at) AS oldest FROM deliveries WHERE status IN ('received', 'processing')`),
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
  const row = await db
    .prepare(`SELECT ${SUMMARY_COLUMNS}, headers, attempt_log, ${bodyColumns()} FROM deliveries WHERE source = ?1 AND id = ?2`)
    .bind(ref.source, ref.id)
    .first<DeliveryRow & { headers: string | null; attempt_log: string | null } & Record<string, unknown>>();
  if (!row) return null;
  return { ...toSummary(row), body: bodyFromRow(row), headers: headersFromColumn(row.headers), attemptLog: attemptLogFromColumn(row.attempt_log) };
}
