/**
 * The delivery's state in D1 as processing moves it: received → (processing) → done | failed.
 *
 * D1 sees a claim only when it must: the lease object (processing/lease/) serializes claims
 * and knows who holds a delivery, so a first claim, or the claim of a retry, only reads the row
 * (`readClaim`), and the run is recorded when it ends, with its result. Only a takeover (the
 * previous holder's lease ran out without a word) is written before its handler runs
 * (`markTakeover`): that record is what fences the vanished worker, should it come back. This
 * saves a write per delivery (migrations/0006).
 *
 * Every write after that is fenced by the lease token (`RESULT_FENCE`, and the trigger
 * `deliveries_lease_fence` for the done mark): a run's result lands only while the delivery is
 * unsettled and no later claim is recorded, and only once. Tokens only grow. The consumer is the
 * only caller: one owner for a delivery's state.
 *
 * `attempts` counts runs that ended: with a result (done, retried, failed: +1 with it), or vanished
 * after D1 saw them start (+1 by the takeover that found them gone, see `markTakeover`). A run cut
 * short by the consumer's own time limit counts nothing, and neither does a claim that met an
 * infrastructure error before any result.
 */
import type { DeliveryRef } from "../../delivery-ref";
import { CONTENT_TYPE, RESULT_FENCE } from "./run-sql";
import { appendAttempt, deferredAttempt, entryAt } from "./attempt-log";
import { attemptJson, type RunTiming } from "../attempts";
import { claimFromRow, GAVE_UP, LEASE_LOST, type StoreClaim } from "../claims";
import { isoTime } from "../clock";
import { resultWrite, type RunResult } from "../run-result";
import { bodyColumns, bodyFromRow } from "./columns";


/** The newest entry of the attempt history, as JSON text (null: none), read by the claim's own statement too. */
const LAST_ATTEMPT = "CASE WHEN json_valid(attempt_log) THEN json_extract(attempt_log, '$[#-1]') END AS last_attempt";


/**
 * The claim of a delivery whose lease was free (its first claim, a retry's, a replay's): reads
 * what the handler needs, and writes nothing. No row: done or failed already, or a takeover
 * newer than `token` is recorded.
 */
export function readClaim(db: D1Database, ref: DeliveryRef, token: number): D1PreparedStatement {
  return db
    .prepare(
      `SELECT status, attempts, error, event_type, received_at, fanout, headers, ${CONTENT_TYPE}, ${LAST_ATTEMPT}, ${bodyColumns()} FROM deliveries
        WHERE source = ?1 AND id = ?2 AND status IN ('received', 'processing') AND coalesce(lease_token, 0) < ?3`,
    )
    .bind(ref.source, ref.id, token);
}

/**
 * The claim of a takeover: the previous holder's lease (token `previousToken`, 0 when the lease
 * object lost it in an eviction) ran out without a word (it crashed or stalled). Recorded before
 * the handler runs, in one statement: `processing` under `token`, which fences the vanished
 * worker's late result.
 *
 * The vanished run is counted only when D1 saw it start: it was itself a recorded takeover, still
 * `processing` under `previousToken` (or under any token, when that is not known). A run D1 never
 * saw may have died before its handler (a lost claim reply, an isolate gone between claim and
 * read), so it counts nothing: an infrastructure failure never uses up an attempt, at the price
 * of one uncounted run in a crash loop, whose later runs are all recorded takeovers. When the
 * counted run was the MAX_ATTEMPTS-th, the delivery is set `failed` instead of running again.
 *
 * Running it again with the same token (a batch that committed but reported an error is retried
 * statement by statement) returns the row as the first run left it, `failed` included, and counts
 * nothing twice: SQLite evaluates every SET expression against the row as it was.
 *
 * A row the previous holder set `failed` (`previousToken`, or any when that is not known) is
 * returned as it is, unchanged: that holder died, or could not send the dead letter, before it
 * settled the lease (processing/attempt.ts `failDelivery`), so the dead letter may not have gone
 * out. The consumer sends it again (at least once: an alert is never lost, at worst repeated).
 */
export function markTakeover(db: D1Database, ref: DeliveryRef, token: number, previousToken: number, maxAttempts: number, nowMs: number): D1PreparedStatement {
  const again = "lease_token IS ?3";
  // A fanned-out delivery's row is its subscribers' summary: no run of its own to count (subscriber-runs.ts).
  const vanished = "status = 'processing' AND fanout IS NULL AND (lease_token = ?6 OR ?6 = 0)";
  const gaveUp = `${vanished} AND attempts + 1 >= ?5`;
  // The vanished run's entry, without a start time: the sweeper may have touched updated_at since.
  const vanishedEntry = entryAt(7, "attempts + 1");
  return db
    .prepare(
      `UPDATE deliveries
          SET status = CASE WHEN ${again} OR status = 'failed' THEN status WHEN ${gaveUp} THEN 'failed' ELSE 'processing' END,
              error = CASE WHEN ${again} OR status = 'failed' THEN error WHEN ${gaveUp} THEN '${GAVE_UP}' || (attempts + 1) || ' attempts without a result)' ELSE error END,
              attempts = CASE WHEN ${again} OR status = 'failed' THEN attempts WHEN ${vanished} THEN attempts + 1 ELSE attempts END,
              attempt_log = CASE WHEN NOT (${again}) AND ${vanished} THEN ${appendAttempt(vanishedEntry)} ELSE attempt_log END,
              lease_token = ?3, updated_at = CASE WHEN status = 'failed' THEN updated_at ELSE ?4 END
        WHERE source = ?1 AND id = ?2 AND ((${RESULT_FENCE}) OR (status = 'failed' AND (lease_token = ?3 OR lease_token = ?6 OR ?6 = 0)))
        RETURNING status, attempts, error, event_type, received_at, fanout, headers, ${CONTENT_TYPE}, ${LAST_ATTEMPT}, ${bodyColumns("body", "status = 'processing'")}`,
    )
    .bind(ref.source, ref.id, token, isoTime(nowMs), maxAttempts, previousToken, attemptJson("vanished", nowMs, undefined, "the worker's lease ran out without a result"));
}

/** What a claim's result (`readClaim` or `markTakeover`) says. */
export function claimedDelivery(result: D1Result): StoreClaim {
  const row = result.results[0] as { status: string; attempts: number; error: string | null; event_type: string | null; received_at: string; fanout: number | null; content_type: unknown; last_attempt: unknown } | undefined;
  return claimFromRow(row && { ...row, body: bodyFromRow(row) });
}

/**
 * The fenced "done" write, which counts the run. It goes first in the handler's effect batch:
 * when `token` may no longer commit (see `RESULT_FENCE`), the trigger aborts it and the whole
 * batch rolls back (see `isLeaseLost`).
 */
export function markDone(db: D1Database, ref: DeliveryRef, token: number, handled: boolean, nowMs: number, run?: RunTiming): D1PreparedStatement {
  return db
    .prepare(
      `UPDATE deliveries
          SET status = 'done', commit_token = ?3, lease_token = ?3, attempts = attempts + 1, handled = ?4, error = NULL, updated_at = ?5,
              attempt_log = ${appendAttempt(entryAt(6, "attempts + 1"))}, subscriber = coalesce(?7, subscriber)
        WHERE source = ?1 AND id = ?2`,
    )
    .bind(ref.source, ref.id, token, handled ? 1 : 0, isoTime(nowMs), attemptJson(handled ? "done" : "unhandled", nowMs, run), run?.subscriber ?? null);
}

/**
 * Goes right after `markDone` in the commit's batch: aborts it (the fence's `lease_lost`, through
 * migrations/0011's trigger) when the delivery is not done under `token`, i.e. when the mark found
 * no row (deleted under the worker). Without it the effects would commit with no done mark; with a
 * row, the fence has already decided, and this reads one row by its key and writes nothing.
 */
export function requireDone(db: D1Database, ref: DeliveryRef, token: number): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO commit_guard (source, id) SELECT ?1, ?2
        WHERE NOT EXISTS (SELECT 1 FROM deliveries WHERE source = ?1 AND id = ?2 AND status = 'done' AND commit_token = ?3)`,
    )
    .bind(ref.source, ref.id, token);
}

/**
 * True when the delivery is done under `token`: a commit of ours landed although its batch
 * reported an error (the fence then refuses a second try, which is not a lost lease).
 */
export async function committedWith(db: D1Database, ref: DeliveryRef, token: number): Promise<boolean> {
  const row = await db
    .prepare("SELECT 1 AS yes FROM deliveries WHERE source = ?1 AND id = ?2 AND status = 'done' AND commit_token = ?3")
    .bind(ref.source, ref.id, token)
    .first<{ yes: number }>();
  return row !== null;
}

/** True for the error the lease fence raises. */
export function isLeaseLost(error: unknown): boolean {
  return error instanceof Error && error.message.includes(LEASE_LOST);
}

/**
 * A run's result other than done (store/run-result.ts), in one fenced statement: a retry or a
 * failure counts the run and appends it to the history; a deferral counts nothing, and updates a
 * deferral with the same reason just before it instead of adding one (`deferredAttempt`).
 * Returns 0 when the fence refused (a newer claim took the delivery over, or it is settled);
 * else the number of deferrals in a row with this reason for a deferral (1 for a new entry),
 * and 1 for the others.
 */
export async function recordResult(db: D1Database, ref: DeliveryRef, token: number, result: RunResult, nowMs: number, run?: RunTiming): Promise<number> {
  const write = resultWrite(result, nowMs, run);
  const row = await db
    .prepare(
      `UPDATE deliveries
          SET status = ?4, error = coalesce(?5, error), attempts = attempts + ?6, lease_token = ?3, updated_at = ?7,
              attempt_log = CASE WHEN ?6 = 1 THEN ${appendAttempt(entryAt(8, "attempts + 1"))} ELSE ${deferredAttempt(8)} END,
              subscriber = coalesce(?9, subscriber)
        WHERE source = ?1 AND id = ?2 AND ${RESULT_FENCE}
        RETURNING coalesce(json_extract(attempt_log, '$[#-1].count'), 1) AS repeats`,
    )
    .bind(ref.source, ref.id, token, write.status, write.error, write.counted, isoTime(nowMs), write.entry, run?.subscriber ?? null)
    .first<{ repeats: number }>();
  return row?.repeats ?? 0;
}
