/**
 * Replay of fanned-out deliveries in Postgres (migrations-postgres/0005): the same statements and
 * rules as D1's (store/d1/run-replay.ts, which says why).
 */
import type { DeliveryRef, RunRef } from "../../delivery-ref";
import { attemptJson } from "../attempts";
import { isoTime } from "../clock";
import type { DeliveryStatus } from "../deliveries";
import type { FailedFilter, ReplayState } from "../replay-state";
import { appendAttempt, entryAt } from "./attempt-log";
import { toNumber } from "./client";
import { ownTransaction, type Queryable } from "./queryable";
import { lockDelivery, summarise } from "./subscriber-runs";

/** A new life, for the time `$t` and the replay's history entry `$e` (its fence: the time in ms, `$m`). */
function newLife(t: number, m: number, e: number): string {
  return `status = 'received', attempts = 0, error = NULL, handled = NULL, updated_at = $${t}::text,
          lease_token = GREATEST(coalesce(lease_token, 0), $${m}::bigint), attempt_log = ${appendAttempt(entryAt(e, "NULL"))}`;
}

/** The replay state of one run, or null when there is none. */
export async function runReplayState(q: Queryable, ref: Required<RunRef>): Promise<ReplayState | null> {
  const { rows } = await q.query<{ status: DeliveryStatus; pruned: boolean }>(
    `SELECT r.status, d.body IS NULL AS pruned FROM subscriber_runs AS r JOIN deliveries AS d ON d.source = r.source AND d.id = r.id
      WHERE r.source = $1 AND r.id = $2 AND r.subscriber = $3`,
    [ref.source, ref.id, ref.subscriber],
  );
  const row = rows[0];
  return row ? { status: row.status, bodyPruned: row.pruned } : null;
}

/** One run back to `received` (D1's `resetRunForReplay`), with its summary, in one transaction. Null when refused. */
export async function resetRunForReplay(q: Queryable, ref: Required<RunRef>, from: readonly ("failed" | "done")[], nowMs: number): Promise<RunRef[] | null> {
  return ownTransaction(q, async () => {
    await lockDelivery(q, ref);
    const { rowCount } = await q.query(
      `UPDATE subscriber_runs SET ${newLife(4, 5, 6)}
        WHERE source = $1 AND id = $2 AND subscriber = $3 AND status = ANY ($7::text[])
          AND EXISTS (SELECT 1 FROM deliveries WHERE source = $1 AND id = $2 AND body IS NOT NULL)`,
      [ref.source, ref.id, ref.subscriber, isoTime(nowMs), nowMs, attemptJson("replayed", nowMs, undefined), from],
    );
    if ((rowCount ?? 0) === 0) return null;
    await summarise(q, ref, nowMs);
    return [ref];
  });
}

/**
 * The runs of the fanned-out deliveries `replayed` (just reset by this replay) whose status is one of
 * `from`: a new life each (D1's `resetRunsOfReplayed`). Returns them.
 */
export async function resetRunsOfReplayed(q: Queryable, replayed: readonly DeliveryRef[], from: readonly ("failed" | "done")[], nowMs: number): Promise<RunRef[]> {
  if (replayed.length === 0) return [];
  const { rows } = await q.query<Required<RunRef>>(
    `UPDATE subscriber_runs SET ${newLife(1, 2, 3)}
      WHERE status = ANY ($4::text[]) AND (source, id) IN (SELECT * FROM unnest($5::text[], $6::text[]))
      RETURNING source, id, subscriber`,
    [isoTime(nowMs), nowMs, attemptJson("replayed", nowMs, undefined), from, replayed.map((ref) => ref.source), replayed.map((ref) => ref.id)],
  );
  return rows.map((row) => ({ source: row.source, id: row.id, subscriber: row.subscriber }));
}

/** A subscriber's failed runs matching `filter`, up to `limit`, oldest first, with their summaries (D1's `resetFailedRunsForReplay`). */
export async function resetFailedRunsForReplay(q: Queryable, filter: FailedFilter & { subscriber: string }, limit: number, nowMs: number): Promise<RunRef[]> {
  const { rows } = await q.query<Required<RunRef> & { received_at: string }>(
    `WITH reset AS (
       UPDATE subscriber_runs SET ${newLife(1, 2, 3)}
        WHERE (source, id, subscriber) IN (
          SELECT r.source, r.id, r.subscriber FROM subscriber_runs AS r
           WHERE r.subscriber = $4 AND r.status = 'failed'
             AND ($5::text IS NULL OR r.received_at >= $5) AND ($6::text IS NULL OR r.received_at < $6) AND ($7::text IS NULL OR r.source = $7)
             AND EXISTS (SELECT 1 FROM deliveries AS d WHERE d.source = r.source AND d.id = r.id AND d.body IS NOT NULL AND ($8::text IS NULL OR d.event_type = $8))
           ORDER BY r.received_at
           LIMIT $9
           FOR UPDATE SKIP LOCKED)
        RETURNING source, id, subscriber, received_at)
     SELECT source, id, subscriber FROM reset ORDER BY received_at, source, id`,
    [isoTime(nowMs), nowMs, attemptJson("replayed", nowMs, undefined), filter.subscriber, filter.since ?? null, filter.until ?? null, filter.source ?? null, filter.eventType ?? null, limit],
  );
  const seen = new Set<string>();
  for (const run of rows) {
    const key = JSON.stringify([run.source, run.id]);
    if (seen.has(key)) continue;
    seen.add(key);
    await ownTransaction(q, async () => {
      await lockDelivery(q, run);
      await summarise(q, run, nowMs);
    });
  }
  return rows.map((row) => ({ source: row.source, id: row.id, subscriber: row.subscriber }));
}

/** How many failed runs of the subscriber matching `filter` a bulk replay would take. */
export async function countFailedRuns(q: Queryable, filter: FailedFilter & { subscriber: string }): Promise<number> {
  const { rows } = await q.query<{ n: string }>(
    `SELECT count(*) AS n FROM subscriber_runs AS r
      WHERE r.subscriber = $1 AND r.status = 'failed'
        AND ($2::text IS NULL OR r.received_at >= $2) AND ($3::text IS NULL OR r.received_at < $3) AND ($4::text IS NULL OR r.source = $4)
        AND EXISTS (SELECT 1 FROM deliveries AS d WHERE d.source = r.source AND d.id = r.id AND d.body IS NOT NULL AND ($5::text IS NULL OR d.event_type = $5))`,
    [filter.subscriber, filter.since ?? null, filter.until ?? null, filter.source ?? null, filter.eventType ?? null],
  );
  return toNumber(rows[0]?.n ?? 0);
}
