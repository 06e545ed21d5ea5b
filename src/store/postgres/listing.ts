/**
 * The listing of deliveries in Postgres, newest first, in keyset pages, and the lookup of one id
 * across sources: the D1 listing's pages, filters and window (store/d1/listing.ts), with the same
 * results. Also the filter terms a bulk replay shares with it (replay.ts).
 *
 * Where Postgres differs: the planner weighs costs with statistics, so no term is written to steer
 * it (D1's `+source`); a partial index still serves only a query that repeats its predicate, so the
 * status terms stay literal; and each page is one statement, so one snapshot, where D1 runs the
 * page and its window's edge as a batch.
 */
import { SUMMARY_COLUMNS, toSummary, type DeliveryRow, type DeliveryStatus, type DeliverySummary } from "../deliveries";
import { LISTING_WINDOW, type DeliveryFilter, type ListingPage, type ListingQuery } from "../listing-query";
import { DONE_NOT_FILTERED_SQL, FILTERED_SQL } from "../filtered";
import { boundTerm as bound, fixedTerm as fixed, numbered, type Term } from "../where-terms";
import type { Queryable } from "./queryable";

/**
 * The status filter with the literal term of the partial index that serves it (deliveries_pending,
 * deliveries_failed). `done` has no index of its own (every row would pay for it): it walks the
 * age index, where nearly every row is done, and is checked row by row.
 */
const STATUS_FILTER: Record<DeliveryStatus, string> = {
  received: "status IN ('received', 'processing') AND status = 'received'",
  processing: "status IN ('received', 'processing') AND status = 'processing'",
  failed: "status = 'failed'",
  done: DONE_NOT_FILTERED_SQL,
  // The partial index of filtered rows (migrations/0013, migrations-postgres/0006; store/filtered.ts).
  filtered: FILTERED_SQL,
};

const ORDER = "ORDER BY received_at DESC, source DESC, id DESC";

/** A filter's terms: `served` by the index the query walks, and `residual`, checked row by row. */
function filterTerms(filter: DeliveryFilter): { served: Term[]; residual: Term[] } {
  const served: Term[] = [];
  const residual: Term[] = [];
  // With a subscriber, the status is that subscriber's (below), not the delivery's summary.
  if (filter.status && !filter.subscriber) (filter.status === "done" ? residual : served).push(fixed(STATUS_FILTER[filter.status]));
  // ISO times in UTC with milliseconds compare as text in time order (COLLATE "C", store/clock.ts).
  if (filter.since) served.push(bound((n) => `received_at >= $${n}`, filter.since));
  if (filter.until) served.push(bound((n) => `received_at < $${n}`, filter.until));
  if (filter.source) residual.push(bound((n) => `source = $${n}`, filter.source));
  if (filter.eventType) residual.push(bound((n) => `event_type = $${n}`, filter.eventType));
  // `handled` is set by the done mark only (a replay clears it): false is a done delivery no handler matched.
  if (filter.unhandled) residual.push(fixed("handled = false"));
  // The ones it alone took (its name on the row), and its runs of fanned-out ones (migrations/0012);
  // with a status, its own progress has it. The status is one of DELIVERY_STATUSES (the API checks it).
  if (filter.subscriber) {
    const runStatus = filter.status ? ` AND r.status = '${filter.status}'` : "";
    const ownStatus = filter.status ? ` AND status = '${filter.status}'` : "";
    residual.push(
      bound(
        (n) => `((fanout IS NULL AND subscriber = $${n}${ownStatus}) OR (source, id) IN (SELECT r.source, r.id FROM subscriber_runs AS r WHERE r.subscriber = $${n}${runStatus}))`,
        filter.subscriber,
      ),
    );
  }
  return { served, residual };
}

/** Every term of a filter, numbered from `$first`, for a statement that walks one index with all of them. */
export function filterConditions(filter: DeliveryFilter, first = 1): { conditions: string[]; params: unknown[] } {
  const { served, residual } = filterTerms(filter);
  const { terms, params } = numbered([...served, ...residual], first);
  return { conditions: terms, params };
}

/**
 * The statement of one page (exported so that a test can EXPLAIN it), newest first by (received_at,
 * source, id), one row more than asked. The index walked is the partial index of the status for
 * received, processing and failed, else the age index; a time range and the cursor are ranges of it.
 *
 * What no index serves (a source, an event type, `done`, unhandled) is checked on the rows of a
 * window of LISTING_WINDOW entries of that walk: the inner `examined` query, whose LIMIT keeps the
 * planner on the index (it pushes no condition below a LIMIT) and which is read lazily, only as far
 * as the page needs. `edge` is the window's last entry when the window is full, from the index
 * alone; each row carries it (one row of NULLs when the page is empty), so that the page and its
 * edge come from one snapshot.
 */
export function listingStatement(query: ListingQuery): { readonly sql: string; readonly params: readonly unknown[] } {
  const cursor: Term[] = query.after
    ? [{ sql: (n) => `(received_at, source, id) < ($${n}, $${n + 1}, $${n + 2})`, values: [query.after.receivedAt, query.after.source, query.after.id] }]
    : [];
  const { served, residual } = filterTerms(query);
  // The served terms are numbered first: the window's walk reuses their parameters.
  const walk = numbered([...served, ...cursor]);
  const checked = numbered(residual, walk.params.length + 1);
  const where = (terms: readonly string[]) => (terms.length > 0 ? `WHERE ${terms.join(" AND ")}` : "");
  const params = [...walk.params, ...checked.params, query.limit + 1];
  const limit = `LIMIT $${params.length}`;
  if (residual.length === 0) return { sql: `SELECT ${SUMMARY_COLUMNS} FROM deliveries ${where(walk.terms)} ${ORDER} ${limit}`, params };
  return {
    sql: `WITH page AS (
        SELECT * FROM (SELECT ${SUMMARY_COLUMNS} FROM deliveries ${where(walk.terms)} ${ORDER} LIMIT ${LISTING_WINDOW}) AS examined
         ${where(checked.terms)} ${ORDER} ${limit}),
      edge AS (
        SELECT received_at AS edge_received_at, source AS edge_source, id AS edge_id
          FROM deliveries ${where(walk.terms)} ${ORDER} OFFSET ${LISTING_WINDOW - 1} LIMIT 1)
      SELECT page.*, edge.* FROM (VALUES (1)) AS one (n) LEFT JOIN page ON true LEFT JOIN edge ON true
       ORDER BY page.received_at DESC, page.source DESC, page.id DESC`,
    params,
  };
}

type PageRow = DeliveryRow & { edge_received_at?: string | null; edge_source?: string | null; edge_id?: string | null };

/**
 * One page of deliveries, newest first, ordered by (received_at, source, id) descending: a total
 * order, so a page boundary never skips or repeats a row, even while new deliveries arrive. With a
 * filter no index serves, a page examines at most LISTING_WINDOW entries: it may then hold fewer
 * rows than asked, even none, and still have a next page (`searchedThrough` says how far it looked).
 * @example
 * const first = await listDeliveries(client, { status: "failed", limit: 50 });
 * const second = await listDeliveries(client, { status: "failed", limit: 50, after: first.nextKey ?? undefined });
 */
export async function listDeliveries(q: Queryable, query: ListingQuery): Promise<ListingPage> {
  const statement = listingStatement(query);
  const { rows } = await q.query<PageRow>(statement.sql, statement.params);
  // source is NOT NULL: a row without one is the empty page's row, carrying only the edge.
  const results = rows.filter((row) => row.source !== null);
  const page = results.slice(0, query.limit).map(toSummary);
  const last = page.at(-1);
  if (results.length > query.limit && last) return { deliveries: page, nextKey: { receivedAt: last.receivedAt, source: last.source, id: last.id }, searchedThrough: null };
  // The three edge columns are NULL together: the window was not full.
  const edge = rows[0];
  if (edge?.edge_received_at) {
    // The window ran out before the page filled: go on from its last entry.
    return { deliveries: page, nextKey: { receivedAt: edge.edge_received_at, source: edge.edge_source!, id: edge.edge_id! }, searchedThrough: edge.edge_received_at };
  }
  return { deliveries: page, nextKey: null, searchedThrough: null };
}

/**
 * The deliveries with this id in any of `sources`, newest first (ties in the order of `sources`):
 * one statement, a primary-key probe per source, so that a lookup by id needs no index of its own.
 * @example
 * await findDeliveryById(client, Object.keys(SOURCES), "evt_1");
 */
export async function findDeliveryById(q: Queryable, sources: readonly string[], id: string): Promise<DeliverySummary[]> {
  if (sources.length === 0) return [];
  const { rows } = await q.query<DeliveryRow>(
    `SELECT ${SUMMARY_COLUMNS} FROM deliveries WHERE source = ANY ($1::text[]) AND id = $2
      ORDER BY received_at DESC, array_position($1::text[], source)`,
    [sources, id],
  );
  return rows.map(toSummary);
}
