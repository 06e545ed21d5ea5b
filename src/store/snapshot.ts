/**
 * The overview's snapshot, as both stores put it together (d1: store/d1/overview.ts, postgres:
 * store/postgres/overview.ts): each reads the same parts (the counts the sweeper's walk carried,
 * the rows past its mark, the partial indexes of the unfinished and the failed) in its own SQL, and
 * this turns them into the numbers the dashboard and `/admin/metrics` show.
 */
import { DELIVERY_STATUSES, zeroCounts, type DeliveryStatus, type StatusCounts } from "./deliveries";
import { isoTime } from "./clock";

/** The `inbox_marks` row up to which (a `received_at`, exclusive) rows are in `inbox_counts` and `inbox_hours`. */
export const COUNTED_THROUGH = "counted_through";
/** The `inbox_marks` row holding the last snapshot (JSON). */
export const OVERVIEW_MARK = "overview";
/** A snapshot is served for this long, then put together again by whoever reads it next (or the sweeper). */
export const OVERVIEW_MAX_AGE_MS = 60_000;
/**
 * While the rows an overview counts live (those past the walk's mark, the unfinished, the failed)
 * are at most this many, every read puts the overview together afresh: a few thousand index
 * entries cost a few milliseconds, and a small inbox (a first run, a demo) then never shows a
 * count that the list page contradicts. Past it (an inbox under load), the snapshot is served for
 * up to OVERVIEW_MAX_AGE_MS, its age shown (`asOf`).
 */
export const LIVE_OVERVIEW_ROWS = 5_000;
/** Rows counted per sweep at most: a database upgraded with a million rows catches up over a few sweeps. */
export const COUNT_WALK_LIMIT = 50_000;
/**
 * The walk stays this far behind the clock: a row's `received_at` is its receiver's clock, and it
 * lands a little later (group commit), so the newest rows are counted live until they are settled in place.
 */
export const COUNT_LAG_MS = 120_000;
/** Hours of `inbox_hours` kept: the chart shows 24. */
export const HOURS_KEPT = 48;
export const HOUR_MS = 3_600_000;

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
  /** Copies answered "duplicate" (a provider's retries), ever, in all and by source (migrations/0009). */
  readonly duplicates: number;
  readonly duplicatesBySource: Record<string, number>;
  /** Age of the oldest received or processing delivery (read live), whole seconds; null when none waits. */
  readonly oldestWaitingSeconds: number | null;
  /** Deliveries received in the last 24 hours (the 24 hours of `hourly`), how many of them failed. */
  readonly last24h: { readonly received: number; readonly failed: number; readonly failureRate: number | null };
  /** The last 24 hours, oldest first, the current one last. */
  readonly hourly: readonly HourCount[];
}

/** The snapshot as stored (without the live oldest waiting). */
export type Snapshot = Omit<Overview, "oldestWaitingSeconds">;

/** The hour of an ISO time as `inbox_hours` keys it: `YYYY-MM-DDTHH`. */
export const hourKey = (ms: number) => isoTime(ms).slice(0, 13);

/** The first of the 24 hours a snapshot at `nowMs` shows (ms). */
export const firstHourMs = (nowMs: number) => Math.floor(nowMs / HOUR_MS) * HOUR_MS - 23 * HOUR_MS;

/** What a store reads for a snapshot, each part as its own rows. */
export interface SnapshotParts {
  /** `inbox_counts`: per source, the rows the walk counted, and the unhandled ones. */
  readonly counted: readonly { readonly source: string; readonly total: number; readonly unhandled: number; readonly duplicates: number }[];
  /** The rows past the walk's mark, per source. */
  readonly tail: readonly { readonly source: string; readonly n: number }[];
  /** `inbox_hours` from the first hour shown on, and the rows past the mark per hour. */
  readonly hours: readonly { readonly hour: string; readonly n: number }[];
  readonly tailHours: readonly { readonly hour: string; readonly n: number }[];
  /** The unfinished rows per source and status, the failed per source, and the failed per hour shown. */
  readonly pending: readonly { readonly source: string; readonly status: DeliveryStatus; readonly n: number }[];
  readonly failed: readonly { readonly source: string; readonly n: number }[];
  readonly failedHours: readonly { readonly hour: string; readonly n: number }[];
  /** The filtered rows per source (their partial index, store/filtered.ts). */
  readonly filtered?: readonly { readonly source: string; readonly n: number }[];
}

/** The snapshot at `nowMs` from its parts. */
export function assembleSnapshot(parts: SnapshotParts, nowMs: number): Snapshot {
  const first = firstHourMs(nowMs);
  const firstHour = hourKey(first);
  const totals = new Map<string, number>();
  let unhandled = 0;
  let duplicates = 0;
  const duplicatesBySource: Record<string, number> = {};
  for (const { source, total, unhandled: n, duplicates: copies } of parts.counted) {
    totals.set(source, total);
    unhandled += n;
    duplicates += copies;
    if (copies > 0) duplicatesBySource[source] = copies;
  }
  for (const { source, n } of parts.tail) totals.set(source, (totals.get(source) ?? 0) + n);

  const bySource: Record<string, StatusCounts> = {};
  const of = (source: string) => (bySource[source] ??= zeroCounts());
  for (const { source, status, n } of parts.pending) of(source)[status] = n;
  for (const { source, n } of parts.failed) of(source).failed = n;
  for (const { source, n } of parts.filtered ?? []) of(source).filtered = n;
  for (const [source, total] of totals) {
    const counts = of(source);
    // What is neither waiting, failed nor filtered is done. Never below zero, should a count lag a deletion.
    counts.done = Math.max(0, total - counts.received - counts.processing - counts.failed - counts.filtered);
  }
  const counts = zeroCounts();
  for (const each of Object.values(bySource)) for (const status of DELIVERY_STATUSES) counts[status] += each[status];

  const received = new Map<string, number>();
  for (const { hour, n } of [...parts.hours, ...parts.tailHours]) if (hour >= firstHour) received.set(hour, (received.get(hour) ?? 0) + n);
  const failed = new Map(parts.failedHours.map(({ hour, n }) => [hour, n]));
  const hourly = Array.from({ length: 24 }, (_, index) => {
    const key = hourKey(first + index * HOUR_MS);
    return { hour: `${key}:00:00.000Z`, received: received.get(key) ?? 0, failed: failed.get(key) ?? 0 };
  });
  const received24 = hourly.reduce((sum, hour) => sum + hour.received, 0);
  const failed24 = hourly.reduce((sum, hour) => sum + hour.failed, 0);
  return {
    asOf: isoTime(nowMs),
    counts,
    bySource,
    unhandled,
    duplicates,
    duplicatesBySource,
    last24h: { received: received24, failed: failed24, failureRate: received24 === 0 ? null : failed24 / received24 },
    hourly,
  };
}

/** The stored snapshot while it is younger than OVERVIEW_MAX_AGE_MS at `nowMs`; null when none is, or it is unreadable. */
export function freshSnapshot(value: string | null | undefined, nowMs: number): Snapshot | null {
  if (value === undefined || value === null) return null;
  let parsed: Snapshot;
  try {
    parsed = JSON.parse(value) as Snapshot;
  } catch {
    return null;
  }
  // A snapshot stored before a field was added is put together again.
  if (typeof parsed.asOf !== "string" || !parsed.counts || !parsed.hourly || typeof parsed.duplicates !== "number") return null;
  return nowMs - Date.parse(parsed.asOf) < OVERVIEW_MAX_AGE_MS ? parsed : null;
}

/** The overview: a snapshot with the oldest waiting delivery's age, from its `received_at` (null when none waits). */
export function withOldestWaiting(snapshot: Snapshot, oldestAt: string | null, nowMs: number): Overview {
  return { ...snapshot, oldestWaitingSeconds: oldestAt === null ? null : Math.max(0, Math.floor((nowMs - Date.parse(oldestAt)) / 1000)) };
}
