/**
 * A fanned-out delivery's subscribers in D1 (migrations/0012): each subscriber's run of the delivery
 * is a row of `subscriber_runs`, with the lifecycle of a delivery's own row (lifecycle.ts says why
 * each statement is as it is: the same fence, the same counting, the same takeover), and the
 * delivery's row summarises them (`summarise`).
 *
 * A delivery with one subscriber never comes here: its own row is its progress, and it costs no row
 * more than before. Fanning out costs the delivery's row one update and a row per subscriber.
 */
import type { DeliveryRef, RunRef } from "../../delivery-ref";
import { attemptJson, type RunTiming } from "../attempts";
import { GAVE_UP } from "../claims";
import { isoTime } from "../clock";
import { resultWrite, type RunResult } from "../run-result";
import { appendAttempt, deferredAttempt, entryAt } from "./attempt-log";
import { bodyColumns } from "./columns";
import { CONTENT_TYPE, RESULT_FENCE } from "./run-sql";

/** The run's key: `?1` source, `?2` id, `?4` subscriber (`?3` is always the token, as in lifecycle.ts). */
const RUN = "source = ?1 AND id = ?2 AND subscriber = ?4";

/** The newest entry of the run's attempt history, as JSON text (null: none). */
const LAST_ATTEMPT = "CASE WHEN json_valid(attempt_log) THEN json_extract(attempt_log, '$[#-1]') END AS last_attempt";

/**
 * Fans the delivery out to `subscribers`, fenced by its lease `token`: its row becomes their summary
 * (`processing`, `fanout` their number) and each gets its run, `received`. Run again (a worker that
 * died before it sent their messages), it adds no run twice. Check the first result's changes: 0
 * when the fence refused.
 */
export function fanOut(db: D1Database, ref: DeliveryRef, token: number, subscribers: readonly string[], nowMs: number): D1PreparedStatement[] {
  return [
    db
      .prepare(
        `UPDATE deliveries SET status = 'processing', fanout = ?4, lease_token = ?3, updated_at = ?5
          WHERE source = ?1 AND id = ?2 AND ${RESULT_FENCE}`,
      )
      .bind(ref.source, ref.id, token, subscribers.length, isoTime(nowMs)),
    db
      .prepare(
        `INSERT OR IGNORE INTO subscriber_runs (source, id, subscriber, received_at, updated_at)
         SELECT d.source, d.id, name.value, d.received_at, ?5 FROM deliveries AS d, json_each(?4) AS name
          WHERE d.source = ?1 AND d.id = ?2 AND d.lease_token = ?3 AND d.fanout IS NOT NULL`,
      )
      .bind(ref.source, ref.id, token, JSON.stringify(subscribers), isoTime(nowMs)),
  ];
}

/**
 * The subscribers of a fanned-out delivery whose runs are not settled, after bringing its summary up
 * to date (a summary a worker died before writing would otherwise stay `processing`).
 */
export async function pendingRuns(db: D1Database, ref: DeliveryRef, nowMs: number): Promise<string[]> {
  const [, pending] = await db.batch([
    summarise(db, ref, nowMs),
    db
      .prepare("SELECT subscriber FROM subscriber_runs WHERE source = ?1 AND id = ?2 AND status IN ('received', 'processing') ORDER BY subscriber")
      .bind(ref.source, ref.id),
  ]);
  return (pending!.results as { subscriber: string }[]).map((row) => row.subscriber);
}

/**
 * The claim of a run whose lease was free: reads what the handler needs (the run's count and
 * history, the delivery's event type, body and content type), and writes nothing.
 */
export function readRunClaim(db: D1Database, ref: Required<RunRef>, token: number): D1PreparedStatement {
  return db
    .prepare(
      `SELECT r.status, r.attempts, r.error, d.event_type, d.received_at, d.headers, ${CONTENT_TYPE},
              CASE WHEN json_valid(r.attempt_log) THEN json_extract(r.attempt_log, '$[#-1]') END AS last_attempt, ${bodyColumns("d.body")}
         FROM subscriber_runs AS r JOIN deliveries AS d ON d.source = r.source AND d.id = r.id
        WHERE r.source = ?1 AND r.id = ?2 AND r.subscriber = ?4 AND r.status IN ('received', 'processing') AND coalesce(r.lease_token, 0) < ?3`,
    )
    .bind(ref.source, ref.id, token, ref.subscriber);
}

/**
 * The claim of a run's takeover (lifecycle.ts `markTakeover`, on the run's row), then the summary
 * (a run the takeover set failed fails its delivery), then the delivery's columns the handler needs.
 * Read the claim from the first result's row and the third's.
 */
export function markRunTakeover(db: D1Database, ref: Required<RunRef>, token: number, previousToken: number, maxAttempts: number, nowMs: number): D1PreparedStatement[] {
  const again = "lease_token IS ?3";
  const vanished = "status = 'processing' AND (lease_token = ?6 OR ?6 = 0)";
  const gaveUp = `${vanished} AND attempts + 1 >= ?5`;
  const vanishedEntry = entryAt(8, "attempts + 1");
  return [
    db
      .prepare(
        `UPDATE subscriber_runs
            SET status = CASE WHEN ${again} OR status = 'failed' THEN status WHEN ${gaveUp} THEN 'failed' ELSE 'processing' END,
                error = CASE WHEN ${again} OR status = 'failed' THEN error WHEN ${gaveUp} THEN '${GAVE_UP}' || (attempts + 1) || ' attempts without a result)' ELSE error END,
                attempts = CASE WHEN ${again} OR status = 'failed' THEN attempts WHEN ${vanished} THEN attempts + 1 ELSE attempts END,
                attempt_log = CASE WHEN NOT (${again}) AND ${vanished} THEN ${appendAttempt(vanishedEntry)} ELSE attempt_log END,
                lease_token = ?3, updated_at = CASE WHEN status = 'failed' THEN updated_at ELSE ?7 END
          WHERE ${RUN} AND ((${RESULT_FENCE}) OR (status = 'failed' AND (lease_token = ?3 OR lease_token = ?6 OR ?6 = 0)))
          RETURNING status, attempts, error, ${LAST_ATTEMPT}`,
      )
      .bind(ref.source, ref.id, token, ref.subscriber, maxAttempts, previousToken, isoTime(nowMs), attemptJson("vanished", nowMs, undefined, "the worker's lease ran out without a result")),
    summarise(db, ref, nowMs),
    db
      .prepare(`SELECT event_type, received_at, headers, ${CONTENT_TYPE}, ${bodyColumns()} FROM deliveries WHERE source = ?1 AND id = ?2`)
      .bind(ref.source, ref.id),
  ];
}

/**
 * The run's fenced done mark (lifecycle.ts `markDone`, on the run's row): first in its commit's
 * batch, whose effects the fence's abort rolls back with it.
 */
export function markRunDone(db: D1Database, ref: Required<RunRef>, token: number, handled: boolean, nowMs: number, run?: RunTiming): D1PreparedStatement {
  return db
    .prepare(
      `UPDATE subscriber_runs
          SET status = 'done', commit_token = ?3, lease_token = ?3, attempts = attempts + 1, handled = ?5, error = NULL, updated_at = ?6,
              attempt_log = ${appendAttempt(entryAt(7, "attempts + 1"))}
        WHERE ${RUN}`,
    )
    .bind(ref.source, ref.id, token, ref.subscriber, handled ? 1 : 0, isoTime(nowMs), attemptJson(handled ? "done" : "unhandled", nowMs, run));
}

/** Right after `markRunDone`: aborts the batch when the run is not done under `token` (its row is gone), as `requireDone`. */
export function requireRunDone(db: D1Database, ref: Required<RunRef>, token: number): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO commit_guard (source, id) SELECT ?1, ?2
        WHERE NOT EXISTS (SELECT 1 FROM subscriber_runs WHERE ${RUN} AND status = 'done' AND commit_token = ?3)`,
    )
    .bind(ref.source, ref.id, token, ref.subscriber);
}

/** True when the run is done under `token` (a commit that landed although its batch reported an error). */
export async function runCommittedWith(db: D1Database, ref: Required<RunRef>, token: number): Promise<boolean> {
  const row = await db
    .prepare(`SELECT 1 AS yes FROM subscriber_runs WHERE ${RUN} AND status = 'done' AND commit_token = ?3`)
    .bind(ref.source, ref.id, token, ref.subscriber)
    .first<{ yes: number }>();
  return row !== null;
}

/**
 * A run's result other than done (lifecycle.ts `recordResult`, on the run's row), then the summary.
 * The first result's row says the count (none: the fence refused).
 */
export function recordRunResult(db: D1Database, ref: Required<RunRef>, token: number, result: RunResult, nowMs: number, run?: RunTiming): D1PreparedStatement[] {
  const write = resultWrite(result, nowMs, run);
  return [
    db
      .prepare(
        `UPDATE subscriber_runs
            SET status = ?5, error = coalesce(?6, error), attempts = attempts + ?7, lease_token = ?3, updated_at = ?8,
                attempt_log = CASE WHEN ?7 = 1 THEN ${appendAttempt(entryAt(9, "attempts + 1"))} ELSE ${deferredAttempt(9)} END
          WHERE ${RUN} AND ${RESULT_FENCE}
          RETURNING coalesce(json_extract(attempt_log, '$[#-1].count'), 1) AS repeats`,
      )
      .bind(ref.source, ref.id, token, ref.subscriber, write.status, write.error, write.counted, isoTime(nowMs), write.entry),
    summarise(db, ref, nowMs),
  ];
}

/**
 * The delivery's row as the summary of its runs: `processing` while one is unsettled, else `failed`
 * when one failed (its error names each failed subscriber), else `done`. Changes nothing on a
 * delivery that was not fanned out, and is safe to run again.
 */
export function summarise(db: D1Database, ref: DeliveryRef, nowMs: number): D1PreparedStatement {
  const runs = "FROM subscriber_runs AS r WHERE r.source = ?1 AND r.id = ?2";
  return db
    .prepare(
      `UPDATE deliveries
          SET status = CASE WHEN EXISTS (SELECT 1 ${runs} AND r.status IN ('received', 'processing')) THEN 'processing'
                            WHEN EXISTS (SELECT 1 ${runs} AND r.status = 'failed') THEN 'failed' ELSE 'done' END,
              error = (SELECT group_concat(r.subscriber || ': ' || coalesce(r.error, ''), '; ') ${runs} AND r.status = 'failed'),
              handled = CASE WHEN EXISTS (SELECT 1 ${runs} AND r.status IN ('received', 'processing')) THEN handled ELSE 1 END,
              updated_at = ?3
        WHERE source = ?1 AND id = ?2 AND fanout IS NOT NULL`,
    )
    .bind(ref.source, ref.id, isoTime(nowMs));
}
