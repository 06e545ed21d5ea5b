/**
 * The replay reset in Postgres, the first step of a replay: the row says "received, attempts 0"
 * before the lease object is reset and the delivery is enqueued again (src/processing/replay.ts
 * explains the order). The only write of the admin API and the dashboard. Same statements and
 * promises as the D1 store's (store/d1/replay.ts); what Postgres adds is concurrency, said where it matters.
 */
import { isSubscriberRun, type DeliveryRef, type RunRef } from "../../delivery-ref";
import { countFailedRuns, resetFailedRunsForReplay, resetRunForReplay, resetRunsOfReplayed, runReplayState } from "./run-replay";
import { attemptJson } from "../attempts";
import { isoTime } from "../clock";
import type { DeliveryStatus } from "../deliveries";
import type { FailedFilter, ReplayState } from "../replay-state";
import { runStatuses, STATUS_AS_SHOWN_SQL, type ReplayFrom } from "../filtered";
import { toNumber } from "./client";
import { appendAttempt, entryAt } from "./attempt-log";
import { filterConditions } from "./listing";
import { ownTransaction, type Queryable } from "./queryable";

/**
 * A replay's fence (`$param`: its time, ms): `lease_token` becomes at least the replay's time. Lease
 * tokens start from the lease object's clock (processing/lease/), so every token handed out before
 * the replay is below it and every claim after it above: a worker of the delivery's previous life,
 * even one whose claim the database never saw, can no longer commit, and a takeover does not count
 * its run as one of the new life's (store/d1/lifecycle.ts). Should the lease object's clock lag this
 * one, its next claim finds nothing to do, and the sweeper's requeue of the waiting row claims it later.
 */
function replayFence(param: number): string {
  return `lease_token = GREATEST(coalesce(lease_token, 0), $${param}::bigint)`;
}

/** What a reset writes besides the fence and the history: a new life, with nothing of the old one's result. */
const NEW_LIFE = "status = 'received', attempts = 0, error = NULL, handled = NULL";

/**
 * The replay state of one delivery, or null when it does not exist.
 * @example
 * const state = await replayState(client, { source: "stripe", id: "evt_1" }); // { status: "failed", bodyPruned: false }
 */
export async function replayState(q: Queryable, ref: RunRef): Promise<ReplayState | null> {
  if (isSubscriberRun(ref)) return runReplayState(q, ref);
  const { rows } = await q.query<{ status: DeliveryStatus; pruned: boolean }>(`SELECT ${STATUS_AS_SHOWN_SQL} AS status, body IS NULL AS pruned FROM deliveries WHERE source = $1 AND id = $2`, [
    ref.source,
    ref.id,
  ]);
  const row = rows[0];
  return row ? { status: row.status, bodyPruned: row.pruned } : null;
}

/**
 * Puts one settled delivery back to `received` with attempts at zero, in one statement, when its
 * status is one of `from` and it still has its body. True when it did. `lease_token` is raised to
 * the replay's time (`replayFence`). The checks are in the same statement as the write: Postgres
 * locks the row to update it, and when another transaction changed it first (retention clearing the
 * body, a second replay, a late result) it waits for that one and checks the WHERE again on the row
 * as it was left. So two replays at once reset the row once, and retention cannot clear the body in
 * between: once the row is `received`, retention leaves it alone.
 * @example
 * if (!(await resetForReplay(client, ref, ["failed"], Date.now()))) console.log(await replayState(client, ref));
 */
export async function resetForReplay(q: Queryable, ref: RunRef, from: readonly ReplayFrom[], nowMs: number): Promise<RunRef[] | null> {
  if (isSubscriberRun(ref)) return resetRunForReplay(q, ref, runStatuses(from), nowMs);
  return ownTransaction(q, async () => {
    const { rows } = await q.query<{ fanout: number | null }>(
      `UPDATE deliveries SET ${NEW_LIFE}, updated_at = $3, ${replayFence(5)}, attempt_log = ${appendAttempt(entryAt(6, "NULL"))}
        WHERE source = $1 AND id = $2 AND ${STATUS_AS_SHOWN_SQL} = ANY ($4::text[]) AND body IS NOT NULL
        RETURNING fanout`,
      [ref.source, ref.id, isoTime(nowMs), from, nowMs, attemptJson("replayed", nowMs, undefined)],
    );
    const row = rows[0];
    if (!row) return null;
    // A fanned-out delivery's runs in `from` get their new life with it (run-replay.ts).
    return row.fanout === null ? [{ source: ref.source, id: ref.id }] : resetRunsOfReplayed(q, [ref], runStatuses(from), nowMs);
  });
}

/**
 * The bulk form: resets up to `limit` failed deliveries matching `filter`, oldest first, and
 * returns them, oldest first (RETURNING keeps no order of its own). Retention keeps the bodies of failed deliveries; one without a body (cleared by
 * hand) is skipped, and left out of `countFailed`, so that a caller looping while some remain
 * comes to an end: it stays failed, and a replay of it alone is refused.
 *
 * The rows are picked `FOR UPDATE SKIP LOCKED`. D1 runs one statement at a time; Postgres runs two
 * bulk replays at once (two admins, the CLI's loop beside the dashboard), and a plain subquery would
 * let both pick the same rows from their snapshots and reset them twice: two "replayed" entries,
 * two messages. Locking the rows as they are picked rechecks each against its latest version (one
 * replayed meanwhile is no longer failed, and drops out), and skipping the locked ones gives the two
 * replays disjoint sets. A failed row another writer holds at that moment (retention deleting it, a
 * replay of that one delivery) is left for the caller's next round; a round may so reset fewer than
 * `limit` while more remain.
 * @example
 * const refs = await resetFailedForReplay(client, { source: "stripe" }, 100, Date.now());
 */
export async function resetFailedForReplay(q: Queryable, filter: FailedFilter, limit: number, nowMs: number): Promise<RunRef[]> {
  const { subscriber, ...rest } = filter;
  const { conditions, params } = filterConditions({ ...rest, status: "failed" });
  if (subscriber !== undefined) {
    params.push(subscriber);
    conditions.push(`fanout IS NULL AND subscriber = $${params.length}`);
  }
  const n = params.length;
  const reset = await ownTransaction(q, async () => {
    const { rows } = await q.query<DeliveryRef & { fanout: number | null }>(
      `WITH reset AS (
         UPDATE deliveries SET ${NEW_LIFE}, updated_at = $${n + 1}, ${replayFence(n + 3)}, attempt_log = ${appendAttempt(entryAt(n + 4, "NULL"))}
          WHERE (source, id) IN (
            SELECT source, id FROM deliveries
             WHERE ${conditions.join(" AND ")} AND body IS NOT NULL
             ORDER BY received_at
             LIMIT $${n + 2}
             FOR UPDATE SKIP LOCKED)
          RETURNING source, id, fanout, received_at)
       SELECT source, id, fanout FROM reset ORDER BY received_at, source, id`,
      [...params, isoTime(nowMs), limit, nowMs, attemptJson("replayed", nowMs, undefined)],
    );
    // A fanned-out delivery runs again through its failed runs, which get their new life with it.
    const fanned = rows.filter((row) => row.fanout !== null);
    const runs = await resetRunsOfReplayed(q, fanned, ["failed"], nowMs);
    return [...rows.filter((row) => row.fanout === null).map((row): RunRef => ({ source: row.source, id: row.id })), ...runs];
  });
  if (subscriber === undefined || reset.length >= limit) return reset;
  return [...reset, ...(await resetFailedRunsForReplay(q, { ...rest, subscriber }, limit - reset.length, nowMs))];
}

/**
 * How many failed deliveries matching `filter` are left that a bulk replay would take.
 * @example
 * const remaining = await countFailed(client, { source: "stripe" });
 */
export async function countFailed(q: Queryable, filter: FailedFilter): Promise<number> {
  const { subscriber, ...rest } = filter;
  const { conditions, params } = filterConditions({ ...rest, status: "failed" });
  if (subscriber !== undefined) {
    params.push(subscriber);
    conditions.push(`fanout IS NULL AND subscriber = $${params.length}`);
  }
  const { rows } = await q.query<{ n: string }>(`SELECT count(*) AS n FROM deliveries WHERE ${conditions.join(" AND ")} AND body IS NOT NULL`, params);
  return toNumber(rows[0]?.n ?? 0) + (subscriber === undefined ? 0 : await countFailedRuns(q, { ...rest, subscriber }));
}
