/**
 * The replay reset, the first step of a replay: D1 says "received, attempts 0" before the lease
 * object is reset and the delivery is enqueued again (src/processing/replay.ts explains the
 * order). The only write of the admin API and the dashboard.
 */
import { isSubscriberRun, type RunRef } from "../../delivery-ref";
import { countFailedRuns, resetFailedRunsForReplay, resetRunForReplay, resetRunsOfReplayed, runReplayState } from "./run-replay";
import { appendAttempt, entryAt } from "./attempt-log";
import { attemptJson } from "../attempts";
import { isoTime } from "../clock";
import type { DeliveryStatus } from "../deliveries";
import { runStatuses, STATUS_AS_SHOWN_SQL, type ReplayFrom } from "../filtered";
import { filterConditions } from "./listing";
import type { FailedFilter, ReplayState } from "../replay-state";

/**
 * A replay's fence (`?param`: its time, ms): `lease_token` becomes at least the replay's time. Lease tokens start from the
 * lease object's clock (processing/lease/), so every token handed out before the replay is
 * below it and every claim after it above: a worker of the delivery's previous life, even one
 * whose claim D1 never saw, can no longer commit, and a takeover does not count its run as one of
 * the new life's (store/d1/lifecycle.ts). Should the lease object's clock lag this one, its next claim
 * finds nothing to do, and the sweeper's requeue of the waiting row claims it later.
 */
function replayFence(param: number): string {
  return `lease_token = max(coalesce(lease_token, 0), ?${param})`;
}

/** The replay state of one delivery (or one run of a fanned-out one), or null when it does not exist. */
export async function replayState(db: D1Database, ref: RunRef): Promise<ReplayState | null> {
  if (isSubscriberRun(ref)) return runReplayState(db, ref);
  const row = await db
    .prepare(`SELECT ${STATUS_AS_SHOWN_SQL} AS status, body IS NULL AS pruned FROM deliveries WHERE source = ?1 AND id = ?2`)
    .bind(ref.source, ref.id)
    .first<{ status: DeliveryStatus; pruned: number }>();
  return row ? { status: row.status, bodyPruned: row.pruned === 1 } : null;
}

/**
 * Puts one settled delivery back to `received` with attempts at zero, in one statement, when its
 * status is one of `from` and it still has its body. `lease_token` is raised to the replay's time
 * (`replayFence`). The body check is in the same statement, so retention cannot clear the body in
 * between: once the row is `received`, retention leaves it alone. A fanned-out delivery's runs whose
 * status is one of `from` get a new life with it (run-replay.ts); a run alone, by its `subscriber`.
 * Returns what to run again (the delivery, or its runs); null when refused.
 */
export async function resetForReplay(db: D1Database, ref: RunRef, from: readonly ReplayFrom[], nowMs: number): Promise<RunRef[] | null> {
  if (isSubscriberRun(ref)) return resetRunForReplay(db, ref, runStatuses(from), nowMs);
  const [reset, runs] = await db.batch<{ fanout: number | null } & RunRef>([
    db
      .prepare(
        `UPDATE deliveries SET status = 'received', attempts = 0, error = NULL, handled = NULL, updated_at = ?3, ${replayFence(5)},
                attempt_log = ${appendAttempt(entryAt(6, "NULL"))}
          WHERE source = ?1 AND id = ?2 AND ${STATUS_AS_SHOWN_SQL} IN (SELECT value FROM json_each(?4)) AND body IS NOT NULL
          RETURNING fanout`,
      )
      .bind(ref.source, ref.id, isoTime(nowMs), JSON.stringify(from), nowMs, attemptJson("replayed", nowMs, undefined)),
    resetRunsOfReplayed(db, runStatuses(from), nowMs, ref),
  ]);
  const row = reset!.results[0];
  if (!row) return null;
  return row.fanout === null ? [{ source: ref.source, id: ref.id }] : runRefs(runs!.results);
}

/** The runs a statement returned, as refs. */
function runRefs(rows: readonly RunRef[]): RunRef[] {
  return rows.map((row) => ({ source: row.source, id: row.id, subscriber: row.subscriber! }));
}

/**
 * The bulk form: resets up to `limit` failed deliveries matching `filter`, oldest first, and
 * returns what to run again (a fanned-out delivery's failed runs in its place). Retention keeps the
 * bodies of failed deliveries; one without a body (cleared by hand) is skipped, and left out of
 * `countFailed`, so that a caller looping while some remain comes to an end: it stays failed, and
 * a replay of it alone is refused. With a `subscriber`: that subscriber's failures only, in the
 * deliveries it alone took and in its runs of fanned-out ones.
 */
export async function resetFailedForReplay(db: D1Database, filter: FailedFilter, limit: number, nowMs: number): Promise<RunRef[]> {
  const { subscriber, ...rest } = filter;
  const { conditions, params } = filterConditions({ ...rest, status: "failed" });
  if (subscriber !== undefined) {
    params.push(subscriber);
    conditions.push(`fanout IS NULL AND subscriber = ?${params.length}`);
  }
  const n = params.length;
  const [reset, runs] = await db.batch<RunRef>([
    db
      .prepare(
        `UPDATE deliveries SET status = 'received', attempts = 0, error = NULL, handled = NULL, updated_at = ?${n + 1}, ${replayFence(n + 3)},
                attempt_log = ${appendAttempt(entryAt(n + 4, "NULL"))}
          WHERE (source, id) IN (
            SELECT source, id FROM deliveries
             WHERE ${conditions.join(" AND ")} AND body IS NOT NULL
             ORDER BY received_at
             LIMIT ?${n + 2})
          RETURNING source, id, fanout`,
      )
      .bind(...params, isoTime(nowMs), limit, nowMs, attemptJson("replayed", nowMs, undefined)),
    resetRunsOfReplayed(db, ["failed"], nowMs, null),
  ]);
  const deliveries = (reset!.results as ({ fanout: number | null } & RunRef)[]).filter((row) => row.fanout === null).map((row) => ({ source: row.source, id: row.id }));
  const fannedRuns = runRefs(runs!.results);
  if (subscriber === undefined || deliveries.length >= limit) return [...deliveries, ...fannedRuns];
  return [...deliveries, ...(await resetFailedRunsForReplay(db, { ...rest, subscriber }, limit - deliveries.length, nowMs))];
}
/** How many failed deliveries matching `filter` are left that a bulk replay would take. */
export async function countFailed(db: D1Database, filter: FailedFilter): Promise<number> {
  const { subscriber, ...rest } = filter;
  const { conditions, params } = filterConditions({ ...rest, status: "failed" });
  if (subscriber !== undefined) {
    params.push(subscriber);
    conditions.push(`fanout IS NULL AND subscriber = ?${params.length}`);
  }
  const row = await db
    .prepare(`SELECT COUNT(*) AS n FROM deliveries WHERE ${conditions.join(" AND ")} AND body IS NOT NULL`)
    .bind(...params)
    .first<{ n: number }>();
  return (row?.n ?? 0) + (subscriber === undefined ? 0 : await countFailedRuns(db, { ...rest, subscriber }));
}
