/**
 * The admin API's queries: counts, listing, one delivery, and the replay reset.
 *
 * Reads never touch the lease columns. The replay reset is the only write, and it is the first
 * step of a replay: D1 says "received, attempts 0" before the lease object is reset and the
 * delivery is enqueued again (src/http/admin/replayer.ts explains the order).
 */
import type { DeliveryRef } from "../processing/messages";
import { appendAttempt, attemptJson, attemptLogFromColumn, entryAt, type AttemptEntry } from "./attempt-log";
import { isoTime } from "./clock";
import { bodyColumns, bodyFromRow } from "./columns";
import { headersFromColumn, type StoredHeaders } from "./headers";

export const DELIVERY_STATUSES = ["received", "processing", "done", "failed"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export type StatusCounts = Record<DeliveryStatus, number>;

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

/** The position after the last row of a page: the listing's sort key. */
export interface ListingKey {
  readonly receivedAt: string;
  readonly source: string;
  readonly id: string;
}

/** Which deliveries a listing or a bulk replay takes; every field optional. */
export interface DeliveryFilter {
  readonly status?: DeliveryStatus | undefined;
  readonly source?: string | undefined;
  readonly eventType?: string | undefined;
  /** Received at or after this ISO time. */
  readonly since?: string | undefined;
  /** Received before this ISO time. */
  readonly until?: string | undefined;
}

export interface ListingQuery extends DeliveryFilter {
  readonly limit: number;
  readonly after?: ListingKey | undefined;
}

export interface ListingPage {
  readonly deliveries: DeliverySummary[];
  /** Where the next page starts when more rows may follow; null on the last page. */
  readonly nextKey: ListingKey | null;
  /**
   * Set when the page stopped at its window (LISTING_WINDOW) before it filled: the `received_at`
   * it searched back to. The next page goes on from there.
   */
  readonly searchedThrough: string | null;
}

interface DeliveryRow {
  source: string;
  id: string;
  event_type: string | null;
  status: DeliveryStatus;
  attempts: number;
  error: string | null;
  handled: number | null;
  received_at: string;
  updated_at: string;
}

const SUMMARY_COLUMNS = "source, id, event_type, status, attempts, error, handled, received_at, updated_at";

function zeroCounts(): StatusCounts {
  return { received: 0, processing: 0, done: 0, failed: 0 };
}

function toSummary(row: DeliveryRow): DeliverySummary {
  return {
    source: row.source,
    id: row.id,
    eventType: row.event_type,
    status: row.status,
    attempts: row.attempts,
    error: row.error,
    handled: row.handled === null ? null : row.handled === 1,
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

/**
 * The status filter of the listing, with the literal term of the partial index that serves it
 * (migrations/0006): SQLite uses a partial index only when the query repeats its WHERE term, and
 * cannot see through a bound parameter. `done` has no index of its own (every row would pay for
 * it): it walks the age index, where nearly every row is done.
 */
const STATUS_FILTER: Record<DeliveryStatus, string> = {
  received: "status IN ('received', 'processing') AND status = 'received'",
  processing: "status IN ('received', 'processing') AND status = 'processing'",
  failed: "status = 'failed'",
  done: "status = 'done'",
};

/**
 * How many index entries one page of a filtered listing examines at most. A filter no index
 * serves (a source, an event type, `done`) is checked row by row along the index, and D1 runs one
 * query at a time: a filter that matches nothing must not walk a million rows while providers
 * wait. A page cut short here ends with a cursor at the last entry examined, so the next page goes
 * on from there (`ListingPage.searchedThrough`).
 */
export const LISTING_WINDOW = 10_000;

/** The listing's statements (exported so that a test can `EXPLAIN QUERY PLAN` them). */
export interface ListingStatements {
  /** The page, newest first, one row more than asked. */
  readonly rows: { readonly sql: string; readonly params: readonly unknown[] };
  /** With a filter no index serves: the window's last entry, when the window is full. */
  readonly window: { readonly sql: string; readonly params: readonly unknown[] } | null;
}

/**
 * The listing's statements, newest first by (received_at, source, id). The index walked is the
 * partial index of the status for received, processing and failed (migrations/0006), else the age
 * index; a time range and the cursor are ranges of it. What no index serves (a source, an event
 * type, `done`) is checked on the rows of a window of LISTING_WINDOW entries of that walk.
 */
export function listingStatement(query: ListingQuery): ListingStatements {
  const cursor: Term[] = query.after
    ? [{ sql: (n) => `(received_at, source, id) < (?${n}, ?${n + 1}, ?${n + 2})`, values: [query.after.receivedAt, query.after.source, query.after.id] }]
    : [];
  const { served, residual } = filterTerms(query);
  // The served terms are numbered first: the window binds their parameters alone.
  const window = numbered([...served, ...cursor]);
  const all = numbered([...served, ...cursor, ...residual]);
  const where = (terms: readonly string[]) => (terms.length > 0 ? `WHERE ${terms.join(" AND ")}` : "");
  const order = "ORDER BY received_at DESC, source DESC, id DESC";
  // One row more than asked tells whether another page exists.
  if (residual.length === 0) {
    const params = [...window.params, query.limit + 1];
    return { rows: { sql: `SELECT ${SUMMARY_COLUMNS} FROM deliveries ${where(window.terms)} ${order} LIMIT ?${params.length}`, params }, window: null };
  }
  const examined = `SELECT received_at, source, id FROM deliveries ${where(window.terms)} ${order} LIMIT ${LISTING_WINDOW}`;
  const params = [...all.params, query.limit + 1];
  return {
    rows: {
      sql: `SELECT ${SUMMARY_COLUMNS} FROM deliveries WHERE (source, id) IN (SELECT source, id FROM (${examined})) AND ${all.terms.slice(window.terms.length).join(" AND ")} ${order} LIMIT ?${params.length}`,
      params,
    },
    // The window's last entry, when it is full: one pass over its index entries, no table row read.
    window: {
      sql: `SELECT received_at, source, id FROM deliveries ${where(window.terms)} ${order} LIMIT 1 OFFSET ${LISTING_WINDOW - 1}`,
      params: window.params,
    },
  };
}

/** A WHERE term and its values, numbered when the statement is put together. */
interface Term {
  readonly sql: (firstParam: number) => string;
  readonly values: readonly unknown[];
}

/** Terms numbered from ?1, in order, and their parameters. */
function numbered(terms: readonly Term[]): { terms: string[]; params: unknown[] } {
  const params: unknown[] = [];
  const sql = terms.map((term) => {
    const text = term.sql(params.length + 1);
    params.push(...term.values);
    return text;
  });
  return { terms: sql, params };
}

/**
 * A filter's terms: `served` by the index the query walks, and `residual`, checked row by row.
 * With a status, the source is written `+source`: the unary plus keeps SQLite from taking the
 * primary key for it (every row of the source, then sorted) instead of the status's small partial
 * index.
 */
function filterTerms(filter: DeliveryFilter): { served: Term[]; residual: Term[] } {
  const served: Term[] = [];
  const residual: Term[] = [];
  const fixed = (text: string): Term => ({ sql: () => text, values: [] });
  const bound = (text: (n: number) => string, value: unknown): Term => ({ sql: text, values: [value] });
  if (filter.status) (filter.status === "done" ? residual : served).push(fixed(STATUS_FILTER[filter.status]));
  // ISO times in UTC with milliseconds compare as text in time order (store/clock.ts).
  if (filter.since) served.push(bound((n) => `received_at >= ?${n}`, filter.since));
  if (filter.until) served.push(bound((n) => `received_at < ?${n}`, filter.until));
  if (filter.source) residual.push(bound((n) => `+source = ?${n}`, filter.source));
  if (filter.eventType) residual.push(bound((n) => `event_type = ?${n}`, filter.eventType));
  return { served, residual };
}

/** Every term of a filter, numbered from ?1, for a statement that walks one index with all of them. */
function filterConditions(filter: DeliveryFilter): { conditions: string[]; params: unknown[] } {
  const { served, residual } = filterTerms(filter);
  const { terms, params } = numbered([...served, ...residual]);
  return { conditions: terms, params };
}

/**
 * One page of deliveries, newest first, ordered by (received_at, source, id) descending: a total
 * order, so a page boundary never skips or repeats a row, even while new deliveries arrive. With a
 * filter no index serves, a page examines at most LISTING_WINDOW entries: it may then hold fewer
 * rows than asked, even none, and still have a next page (`searchedThrough` says how far it looked).
 * @example
 * const first = await listDeliveries(env.DB, { status: "failed", limit: 50 });
 * const second = await listDeliveries(env.DB, { status: "failed", limit: 50, after: first.nextKey ?? undefined });
 */
export async function listDeliveries(db: D1Database, query: ListingQuery): Promise<ListingPage> {
  const statements = listingStatement(query);
  const rowsStatement = db.prepare(statements.rows.sql).bind(...statements.rows.params);
  const [rows, window] = statements.window
    ? await db.batch<Record<string, unknown>>([rowsStatement, db.prepare(statements.window.sql).bind(...statements.window.params)])
    : [await rowsStatement.all<Record<string, unknown>>(), null];
  const results = rows!.results as unknown as DeliveryRow[];
  const page = results.slice(0, query.limit).map(toSummary);
  const last = page.at(-1);
  if (results.length > query.limit && last) return { deliveries: page, nextKey: { receivedAt: last.receivedAt, source: last.source, id: last.id }, searchedThrough: null };
  const edge = window?.results[0] as { received_at: string; source: string; id: string } | undefined;
  if (edge) {
    // The window ran out before the page filled: go on from its last entry.
    return { deliveries: page, nextKey: { receivedAt: edge.received_at, source: edge.source, id: edge.id }, searchedThrough: edge.received_at };
  }
  return { deliveries: page, nextKey: null, searchedThrough: null };
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

/**
 * The deliveries with this id in any of `sources`, newest first: one primary-key lookup per
 * source, in one round trip, so that a lookup by id needs no index of its own.
 * @example
 * await findDeliveryById(env.DB, Object.keys(SOURCES), "evt_1");
 */
export async function findDeliveryById(db: D1Database, sources: readonly string[], id: string): Promise<DeliverySummary[]> {
  if (sources.length === 0) return [];
  const statement = db.prepare(`SELECT ${SUMMARY_COLUMNS} FROM deliveries WHERE source = ?1 AND id = ?2`);
  const results = await db.batch<DeliveryRow>(sources.map((source) => statement.bind(source, id)));
  return results
    .flatMap((result) => result.results)
    .map(toSummary)
    .sort((a, b) => (a.receivedAt < b.receivedAt ? 1 : a.receivedAt > b.receivedAt ? -1 : 0));
}

/**
 * A replay's fence (`?param`: its time, ms): `lease_token` becomes at least the replay's time. Lease tokens start from the
 * lease object's clock (processing/lease.ts), so every token handed out before the replay is
 * below it and every claim after it above: a worker of the delivery's previous life, even one
 * whose claim D1 never saw, can no longer commit, and a takeover does not count its run as one of
 * the new life's (store/lifecycle.ts). Should the lease object's clock lag this one, its next claim
 * finds nothing to do, and the sweeper's requeue of the waiting row claims it later.
 */
function replayFence(param: number): string {
  return `lease_token = max(coalesce(lease_token, 0), ?${param})`;
}

/** What decides whether a delivery can be replayed, when the replay reset refused it. */
export interface ReplayState {
  readonly status: DeliveryStatus;
  /** Retention cleared the body: a replay would hand its handler no bytes. */
  readonly bodyPruned: boolean;
}

/** The replay state of one delivery, or null when it does not exist. */
export async function replayState(db: D1Database, ref: DeliveryRef): Promise<ReplayState | null> {
  const row = await db
    .prepare("SELECT status, body IS NULL AS pruned FROM deliveries WHERE source = ?1 AND id = ?2")
    .bind(ref.source, ref.id)
    .first<{ status: DeliveryStatus; pruned: number }>();
  return row ? { status: row.status, bodyPruned: row.pruned === 1 } : null;
}

/**
 * Puts one settled delivery back to `received` with attempts at zero, in one statement, when its
 * status is one of `from` and it still has its body. True when it did. `lease_token` is raised to
 * the replay's time (`replayFence`). The body check is in the same statement, so retention cannot
 * clear the body in between: once the row is `received`, retention leaves it alone.
 */
export async function resetForReplay(db: D1Database, ref: DeliveryRef, from: readonly ("failed" | "done")[], nowMs: number): Promise<boolean> {
  const result = await db
    .prepare(
      `UPDATE deliveries SET status = 'received', attempts = 0, error = NULL, handled = NULL, updated_at = ?3, ${replayFence(5)},
              attempt_log = ${appendAttempt(entryAt(6, "NULL"))}
        WHERE source = ?1 AND id = ?2 AND status IN (SELECT value FROM json_each(?4)) AND body IS NOT NULL`,
    )
    .bind(ref.source, ref.id, isoTime(nowMs), JSON.stringify(from), nowMs, attemptJson("replayed", nowMs, undefined))
    .run();
  return result.meta.changes > 0;
}

/** Which failed deliveries a bulk replay takes: the listing's filters but the status. */
export type FailedFilter = Omit<DeliveryFilter, "status">;

/**
 * The bulk form: resets up to `limit` failed deliveries matching `filter`, oldest first, and
 * returns them. Retention keeps the bodies of failed deliveries; one without a body (cleared by
 * hand) is skipped, and left out of `countFailed`, so that a caller looping while some remain
 * comes to an end: it stays failed, and a replay of it alone is refused.
 */
export async function resetFailedForReplay(db: D1Database, filter: FailedFilter, limit: number, nowMs: number): Promise<DeliveryRef[]> {
  const { conditions, params } = filterConditions({ ...filter, status: "failed" });
  const n = params.length;
  const { results } = await db
    .prepare(
      `UPDATE deliveries SET status = 'received', attempts = 0, error = NULL, handled = NULL, updated_at = ?${n + 1}, ${replayFence(n + 3)},
              attempt_log = ${appendAttempt(entryAt(n + 4, "NULL"))}
        WHERE (source, id) IN (
          SELECT source, id FROM deliveries
           WHERE ${conditions.join(" AND ")} AND body IS NOT NULL
           ORDER BY received_at
           LIMIT ?${n + 2})
        RETURNING source, id`,
    )
    .bind(...params, isoTime(nowMs), limit, nowMs, attemptJson("replayed", nowMs, undefined))
    .all<DeliveryRef>();
  return results;
}

/** How many failed deliveries matching `filter` are left that a bulk replay would take. */
export async function countFailed(db: D1Database, filter: FailedFilter): Promise<number> {
  const { conditions, params } = filterConditions({ ...filter, status: "failed" });
  const row = await db
    .prepare(`SELECT COUNT(*) AS n FROM deliveries WHERE ${conditions.join(" AND ")} AND body IS NOT NULL`)
    .bind(...params)
    .first<{ n: number }>();
  return row?.n ?? 0;
}
