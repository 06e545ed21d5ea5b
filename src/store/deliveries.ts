/**
 * What a delivery looks like to the admin API and the dashboard, in either store: its statuses, the
 * counts by status, a summary as listed and one delivery whole, and the row of SUMMARY_COLUMNS both
 * stores read them from (`toSummary`). Shared by the D1 store (d1/) and the Postgres store
 * (postgres/), and by the callers through index.ts.
 */
import { attemptLogFromColumn, type AttemptEntry } from "./attempts";
import { isFilteredRow } from "./filtered";
import type { StoredHeaders } from "./headers";

/**
 * `filtered`: kept out by its source's filter, never processed (docs/filters.md). Not a value of
 * the status column: stored as a done row without `handled` (filtered.ts).
 */
export const DELIVERY_STATUSES = ["received", "processing", "done", "failed", "filtered"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export type StatusCounts = Record<DeliveryStatus, number>;

export function zeroCounts(): StatusCounts {
  return { received: 0, processing: 0, done: 0, failed: 0, filtered: 0 };
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
  /** Copies answered "duplicate" after this one was stored (a provider's retries), and when the last came. */
  readonly duplicates: number;
  readonly lastDuplicateAt: string | null;
  /** Whose progress the row is, when one subscriber took it; null for none, or for a fanned-out delivery. */
  readonly subscriber: string | null;
  /** How many subscribers it was fanned out to (each run is in `runs` of its detail); null: one or none. */
  readonly fanout: number | null;
}

/** How many of a source's deliveries a subscriber has failed. */
export interface SubscriberCount {
  readonly source: string;
  readonly subscriber: string;
  readonly failed: number;
}

/** The rows of the failed counts (a subscriber may come twice: its own rows, its runs) summed. */
export function sumSubscriberCounts(rows: readonly { source: string; subscriber: string; n: number | string }[]): SubscriberCount[] {
  const sums = new Map<string, SubscriberCount>();
  for (const row of rows) {
    const key = JSON.stringify([row.source, row.subscriber]);
    sums.set(key, { source: row.source, subscriber: row.subscriber, failed: (sums.get(key)?.failed ?? 0) + Number(row.n) });
  }
  return [...sums.values()].sort((a, b) => (a.source === b.source ? (a.subscriber < b.subscriber ? -1 : 1) : a.source < b.source ? -1 : 1));
}

/** One subscriber's run of a fanned-out delivery: its own progress. */
export interface SubscriberRun {
  readonly subscriber: string;
  readonly status: DeliveryStatus;
  readonly attempts: number;
  readonly error: string | null;
  readonly updatedAt: string;
  readonly attemptLog: readonly AttemptEntry[];
}

/** A summary plus the raw body bytes (null once retention pruned them), its request headers and its attempt history. */
export interface DeliveryDetail extends DeliverySummary {
  readonly body: Uint8Array | null;
  /** The request headers as received, credentials left out (store/headers.ts); null when not stored or cleared with the body. */
  readonly headers: StoredHeaders | null;
  /** Each run and replay, oldest first (store/attempts.ts). */
  readonly attemptLog: readonly AttemptEntry[];
  /** A fanned-out delivery's runs, by subscriber name; empty otherwise. */
  readonly runs: readonly SubscriberRun[];
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
  duplicates: number;
  last_duplicate_at: string | null;
  subscriber: string | null;
  fanout: number | null;
}

export const SUMMARY_COLUMNS = "source, id, event_type, status, attempts, error, handled, received_at, updated_at, duplicates, last_duplicate_at, subscriber, fanout";

/** One delivery as listed, from a row of SUMMARY_COLUMNS (either store's). */
export function toSummary(row: DeliveryRow): DeliverySummary {
  return {
    source: row.source,
    id: row.id,
    eventType: row.event_type,
    status: isFilteredRow(row.status, row.handled) ? "filtered" : row.status,
    attempts: row.attempts,
    error: row.error,
    handled: row.handled === null ? null : row.handled === true || row.handled === 1,
    receivedAt: row.received_at,
    updatedAt: row.updated_at,
    duplicates: Number(row.duplicates),
    lastDuplicateAt: row.last_duplicate_at,
    subscriber: row.subscriber ?? null,
    fanout: row.fanout === null || row.fanout === undefined ? null : Number(row.fanout),
  };
}

/** The columns of a subscriber's run a delivery's detail shows (`toRun`). */
export const RUN_COLUMNS = "subscriber, status, attempts, error, updated_at, attempt_log";

/** A run's row of RUN_COLUMNS (its history as JSON text) as the detail shows it. */
export function toRun(row: { subscriber: string; status: DeliveryStatus; attempts: number; error: string | null; updated_at: string; attempt_log: string | null }): SubscriberRun {
  return {
    subscriber: row.subscriber,
    status: row.status,
    attempts: Number(row.attempts),
    error: row.error,
    updatedAt: row.updated_at,
    attemptLog: attemptLogFromColumn(row.attempt_log),
  };
}
