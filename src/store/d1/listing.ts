/**
 * The listing of deliveries, newest first, in keyset pages, and the lookup of one id across
 * sources: what the admin API's and the dashboard's lists run. Also the filter terms a bulk
 * replay shares with it (replay.ts). What it asks and answers is in store/listing-query.ts.
 */
import { SUMMARY_COLUMNS, toSummary, type DeliveryRow, type DeliveryStatus, type DeliverySummary } from "../deliveries";
import { LISTING_WINDOW, type DeliveryFilter, type ListingPage, type ListingQuery } from "../listing-query";
import { DONE_NOT_FILTERED_SQL, FILTERED_SQL } from "../filtered";
import { FRESH_MARK_SQL, UNTOUCHED_SQL, WAITING_SQL } from "./fresh";
import { boundTerm as bound, fixedTerm as fixed, numbered, type Term } from "../where-terms";

/**
 * The status filter of the listing, with the literal term of the partial index that serves it
 * (migrations/0006, 0016): SQLite uses a partial index only when the query repeats its WHERE term,
 * and cannot see through a bound parameter. `done` has no index of its own (every row would pay
 * for it): it walks the age index, where nearly every row is done. `received` is two walks: its
 * touched rows in the waiting index, and its untouched rows, which no index holds, on the age index
 * past the walk's mark, where every one of them is (store/d1/fresh.ts); the listing reads it from
 * RECEIVED_ROWS, the term here is for statements that take a filter whole. A `processing` row
 * always has its lease token (a takeover wrote it).
 */
const STATUS_FILTER: Record<DeliveryStatus, string> = {
  received: `((${WAITING_SQL} AND status = 'received') OR (received_at >= ${FRESH_MARK_SQL} AND ${UNTOUCHED_SQL}))`,
  processing: `${WAITING_SQL} AND status = 'processing'`,
  failed: "status = 'failed'",
  done: DONE_NOT_FILTERED_SQL,
  // The partial index of filtered rows (migrations/0013, migrations-postgres/0006; store/filtered.ts).
  filtered: FILTERED_SQL,
};

/**
 * The received rows, as the listing reads them: both walks, each named (the planner, not knowing how
 * few rows either holds, would rather walk the age index newest first, all of it). SQLite pushes the
 * page's time range and cursor into each walk, and sorts what they find: a few rows.
 */
const RECEIVED_ROWS = `(SELECT * FROM deliveries INDEXED BY deliveries_waiting WHERE ${WAITING_SQL} AND status = 'received'
  UNION ALL SELECT * FROM deliveries INDEXED BY deliveries_by_age WHERE received_at >= ${FRESH_MARK_SQL} AND ${UNTOUCHED_SQL})`;

/** The statuses no partial index serves: checked row by row on a window of the age index. */
const UNINDEXED_STATUSES: ReadonlySet<DeliveryStatus> = new Set(["done"]);

/** The listing's statements (exported so that a test can `EXPLAIN QUERY PLAN` them). */
export interface ListingStatements {
  /** The page, newest first, one row more than asked. */
  readonly rows: { readonly sql: string; readonly params: readonly unknown[] };
  /** With a filter no index serves: the window's last entry, when the window is full. */
  readonly window: { readonly sql: string; readonly params: readonly unknown[] } | null;
}

/**
 * The listing's statements, newest first by (received_at, source, id). The index walked is the
 * partial index of the status for received, processing and failed (migrations/0016, 0006), else
 * the age index; a time range and the cursor are ranges of it. What no index serves (a source, an
 * event type, `done`, unhandled) is checked on the rows of a window of LISTING_WINDOW entries of
 * that walk.
 */
export function listingStatement(query: ListingQuery): ListingStatements {
  const cursor: Term[] = query.after
    ? [{ sql: (n) => `(received_at, source, id) < (?${n}, ?${n + 1}, ?${n + 2})`, values: [query.after.receivedAt, query.after.source, query.after.id] }]
    : [];
  // A received listing reads its two walks instead of the table, and needs no status term then.
  const received = query.status === "received" && !query.subscriber;
  const rows = received ? RECEIVED_ROWS : "deliveries";
  const { served, residual } = filterTerms(received ? { ...query, status: undefined } : query);
  // The served terms are numbered first: the window binds their parameters alone.
  const window = numbered([...served, ...cursor]);
  const all = numbered([...served, ...cursor, ...residual]);
  const where = (terms: readonly string[]) => (terms.length > 0 ? `WHERE ${terms.join(" AND ")}` : "");
  const order = "ORDER BY received_at DESC, source DESC, id DESC";
  // One row more than asked tells whether another page exists.
  if (residual.length === 0) {
    const params = [...window.params, query.limit + 1];
    return { rows: { sql: `SELECT ${SUMMARY_COLUMNS} FROM ${rows} ${where(window.terms)} ${order} LIMIT ?${params.length}`, params }, window: null };
  }
  const examined = `SELECT received_at, source, id FROM ${rows} ${where(window.terms)} ${order} LIMIT ${LISTING_WINDOW}`;
  const params = [...all.params, query.limit + 1];
  return {
    rows: {
      sql: `SELECT ${SUMMARY_COLUMNS} FROM deliveries WHERE (source, id) IN (SELECT source, id FROM (${examined})) AND ${all.terms.slice(window.terms.length).join(" AND ")} ${order} LIMIT ?${params.length}`,
      params,
    },
    // The window's last entry, when it is full: one pass over its index entries, no table row read.
    window: {
      sql: `SELECT received_at, source, id FROM ${rows} ${where(window.terms)} ${order} LIMIT 1 OFFSET ${LISTING_WINDOW - 1}`,
      params: window.params,
    },
  };
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
  // With a subscriber, the status is that subscriber's (below), not the delivery's summary.
  if (filter.status && !filter.subscriber) (UNINDEXED_STATUSES.has(filter.status) ? residual : served).push(fixed(STATUS_FILTER[filter.status]));
  // ISO times in UTC with milliseconds compare as text in time order (store/clock.ts).
  if (filter.since) served.push(bound((n) => `received_at >= ?${n}`, filter.since));
  if (filter.until) served.push(bound((n) => `received_at < ?${n}`, filter.until));
  if (filter.source) residual.push(bound((n) => `+source = ?${n}`, filter.source));
  if (filter.eventType) residual.push(bound((n) => `event_type = ?${n}`, filter.eventType));
  // `handled` is set by the done mark only (a replay clears it): 0 is a done delivery no handler matched.
  if (filter.unhandled) residual.push(fixed("handled = 0"));
  // The ones it alone took (its name on the row), and its runs of fanned-out ones (migrations/0012);
  // with a status, its own progress has it. The status is one of DELIVERY_STATUSES (the API checks it).
  if (filter.subscriber) {
    const runStatus = filter.status ? ` AND r.status = '${filter.status}'` : "";
    const ownStatus = filter.status ? ` AND status = '${filter.status}'` : "";
    residual.push(
      bound(
        (n) => `((fanout IS NULL AND subscriber = ?${n}${ownStatus}) OR (source, id) IN (SELECT r.source, r.id FROM subscriber_runs AS r WHERE r.subscriber = ?${n}${runStatus}))`,
        filter.subscriber,
      ),
    );
  }
  return { served, residual };
}

/** Every term of a filter, numbered from ?1, for a statement that walks one index with all of them. */
export function filterConditions(filter: DeliveryFilter): { conditions: string[]; params: unknown[] } {
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
