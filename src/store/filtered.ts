/**
 * How a filtered delivery (docs/filters.md) is kept, in both stores. The status column's CHECK
 * (migrations/0001, 0006) allows received, processing, done and failed, and D1 cannot change a
 * CHECK without rebuilding the table; so a filtered delivery is stored finished, in existing
 * columns: `status = 'done'` with `handled` NULL (every done mark sets it, true or false) and the
 * reason in `error` (a done mark clears it). Reads show it as the status `filtered`
 * (deliveries.ts `toSummary`); a replay clears all three like any replay's, so the row runs as a
 * normal delivery. A partial index of these rows (migrations/0013, migrations-postgres/0006)
 * serves the listing and the counts.
 */

/** The rows that are filtered deliveries, as an SQL term valid in both stores (the partial index's WHERE). */
export const FILTERED_SQL = "status = 'done' AND handled IS NULL";

/** The done rows that are not filtered. */
export const DONE_NOT_FILTERED_SQL = "status = 'done' AND handled IS NOT NULL";

/** A row's status as reads show it (`filtered` for a filtered row), as an SQL expression valid in both stores. */
export const STATUS_AS_SHOWN_SQL = "CASE WHEN status = 'done' AND handled IS NULL THEN 'filtered' ELSE status END";

/** What a replay may start from: a filtered delivery needs no force (it never ran). */
export type ReplayFrom = "failed" | "done" | "filtered";

/** The statuses of `from` a subscriber's run can have: runs are never filtered. */
export function runStatuses(from: readonly ReplayFrom[]): ("failed" | "done")[] {
  return from.filter((status): status is "failed" | "done" => status !== "filtered");
}

/** Characters of a reason kept: the clause and value are bounded already (src/filters), this bounds the whole. */
const MAX_REASON_LENGTH = 800;

/**
 * A filtered delivery's reason, as stored in `error` and shown in the listing: the clause that
 * failed and the value it saw (JSON text, or `absent`).
 * @example
 * filteredReason("type oneOf [\"invoice.paid\"]", "\"customer.created\""); // 'filtered: type oneOf ["invoice.paid"]; saw "customer.created"'
 */
export function filteredReason(clause: string, saw: string | null): string {
  const reason = `filtered: ${clause}; saw ${saw ?? "absent"}`;
  return reason.length <= MAX_REASON_LENGTH ? reason : `${reason.slice(0, MAX_REASON_LENGTH - 1)}…`;
}

/** Whether a row's status and `handled` make it a filtered delivery (`handled`: 1/0 in D1, a boolean in Postgres). */
export function isFilteredRow(status: string, handled: unknown): boolean {
  return status === "done" && (handled === null || handled === undefined);
}
