/**
 * A fanned-out delivery's subscribers in Postgres (migrations-postgres/0005): the same statements and
 * rules as D1's (store/d1/subscriber-runs.ts, which says why), with `$N` parameters and jsonb.
 */
import type { DeliveryRef, RunRef } from "../../delivery-ref";
import { attemptJson, type RunTiming } from "../attempts";
import { GAVE_UP, type ClaimRow } from "../claims";
import { isoTime } from "../clock";
import { resultWrite, type RunResult } from "../run-result";
import { appendAttempt, deferredAttempt, entryAt } from "./attempt-log";
import { bodyColumnsWhen, type BodyRow } from "./body";
import { pgText, toNumber, type Queryable } from "./client";
import { CONTENT_TYPE, RESULT_FENCE } from "./run-sql";
import { ownTransaction } from "./queryable";

/** The run's key: `$1` source, `$2` id, `$4` subscriber (`$3` is always the token). */
const RUN = "source = $1 AND id = $2 AND subscriber = $4";

/** Fans the delivery out (D1's `fanOut`), in one transaction. False when the fence refused. */
export async function fanOut(db: Queryable, ref: DeliveryRef, token: number, subscribers: readonly string[], nowMs: number): Promise<boolean> {
  return ownTransaction(db, async () => {
    const marked = await db.query(
      `UPDATE deliveries SET status = 'processing', fanout = $4::integer, lease_token = $3::bigint, updated_at = $5::text
        WHERE source = $1 AND id = $2 AND ${RESULT_FENCE}`,
      [ref.source, ref.id, token, subscribers.length, isoTime(nowMs)],
    );
    if ((marked.rowCount ?? 0) === 0) return false;
    await db.query(
      `INSERT INTO subscriber_runs (source, id, subscriber, received_at, updated_at)
       SELECT d.source, d.id, name, d.received_at, $4::text FROM deliveries AS d, unnest($3::text[]) AS name
        WHERE d.source = $1 AND d.id = $2
       ON CONFLICT DO NOTHING`,
      [ref.source, ref.id, subscribers, isoTime(nowMs)],
    );
    return true;
  });
}

/** The subscribers whose runs are not settled, the summary brought up to date first (D1's `pendingRuns`). */
export async function pendingRuns(db: Queryable, ref: DeliveryRef, nowMs: number): Promise<string[]> {
  await ownTransaction(db, async () => {
    await lockDelivery(db, ref);
    await summarise(db, ref, nowMs);
  });
  const { rows } = await db.query<{ subscriber: string }>(
    "SELECT subscriber FROM subscriber_runs WHERE source = $1 AND id = $2 AND status IN ('received', 'processing') ORDER BY subscriber",
    [ref.source, ref.id],
  );
  return rows.map((row) => row.subscriber);
}

/** The claim of a run: a read for a free lease, else the takeover's fenced write (D1's `markRunTakeover`), with its summary, in one transaction. */
export async function claimRun(db: Queryable, ref: Required<RunRef>, token: number, takeover: { previousToken: number; maxAttempts: number } | null, nowMs: number): Promise<(ClaimRow & BodyRow) | undefined> {
  if (!takeover) {
    const { rows } = await db.query<ClaimRow & BodyRow>(
      `SELECT r.status, r.attempts, r.error, d.event_type, d.received_at, d.headers, ${CONTENT_TYPE}, r.attempt_log -> -1 AS last_attempt, d.body, d.body_encoding
         FROM subscriber_runs AS r JOIN deliveries AS d ON d.source = r.source AND d.id = r.id
        WHERE r.source = $1 AND r.id = $2 AND r.subscriber = $4 AND r.status IN ('received', 'processing') AND coalesce(r.lease_token, 0) < $3::bigint`,
      [ref.source, ref.id, token, ref.subscriber],
    );
    return rows[0];
  }
  const again = "lease_token IS NOT DISTINCT FROM $3::bigint";
  const vanished = "status = 'processing' AND (lease_token = $6::bigint OR $6::bigint = 0)";
  const gaveUp = `${vanished} AND attempts + 1 >= $5::integer`;
  return ownTransaction(db, async () => {
    await lockDelivery(db, ref);
    const { rows } = await db.query<{ status: string; attempts: number; error: string | null; last_attempt: unknown }>(
      `UPDATE subscriber_runs
          SET status = CASE WHEN ${again} OR status = 'failed' THEN status WHEN ${gaveUp} THEN 'failed' ELSE 'processing' END,
              error = CASE WHEN ${again} OR status = 'failed' THEN error WHEN ${gaveUp} THEN '${GAVE_UP}' || (attempts + 1) || ' attempts without a result)' ELSE error END,
              attempts = CASE WHEN ${again} OR status = 'failed' THEN attempts WHEN ${vanished} THEN attempts + 1 ELSE attempts END,
              attempt_log = CASE WHEN NOT (${again}) AND ${vanished} THEN ${appendAttempt(entryAt(8, "attempts + 1"))} ELSE attempt_log END,
              lease_token = $3::bigint, updated_at = CASE WHEN status = 'failed' THEN updated_at ELSE $7::text END
        WHERE ${RUN} AND ((${RESULT_FENCE}) OR (status = 'failed' AND (lease_token = $3::bigint OR lease_token = $6::bigint OR $6::bigint = 0)))
        RETURNING status, attempts, error, attempt_log -> -1 AS last_attempt`,
      [ref.source, ref.id, token, ref.subscriber, takeover.maxAttempts, takeover.previousToken, isoTime(nowMs), attemptJson("vanished", nowMs, undefined, "the worker's lease ran out without a result")],
    );
    const run = rows[0];
    if (!run) return undefined;
    await summarise(db, ref, nowMs);
    const delivery = await db.query<Omit<ClaimRow & BodyRow, "status" | "attempts" | "error" | "last_attempt">>(
      `SELECT event_type, received_at, headers, ${CONTENT_TYPE}, ${bodyColumnsWhen("$3::text = 'processing'")} FROM deliveries WHERE source = $1 AND id = $2`,
      [ref.source, ref.id, run.status],
    );
    return delivery.rows[0] && { ...delivery.rows[0], ...run };
  });
}

/** The run's fenced done mark (D1's `markRunDone`): the number of rows it changed (0 or 1). */
export async function markRunDone(db: Queryable, ref: Required<RunRef>, token: number, handled: boolean, nowMs: number, run?: RunTiming): Promise<number> {
  const result = await db.query(
    `UPDATE subscriber_runs
        SET status = 'done', commit_token = $3::bigint, lease_token = $3::bigint, attempts = attempts + 1, handled = $5::boolean, error = NULL,
            updated_at = $6::text, attempt_log = ${appendAttempt(entryAt(7, "attempts + 1"))}
      WHERE ${RUN}`,
    [ref.source, ref.id, token, ref.subscriber, handled, isoTime(nowMs), attemptJson(handled ? "done" : "unhandled", nowMs, run)],
  );
  return result.rowCount ?? 0;
}

/** True when the run is done under `token`. */
export async function runCommittedWith(db: Queryable, ref: Required<RunRef>, token: number): Promise<boolean> {
  const { rows } = await db.query(`SELECT 1 AS yes FROM subscriber_runs WHERE ${RUN} AND status = 'done' AND commit_token = $3::bigint`, [
    ref.source,
    ref.id,
    token,
    ref.subscriber,
  ]);
  return rows.length > 0;
}

/** A run's result other than done (D1's `recordRunResult`), with the summary, in one transaction. */
export async function recordRunResult(db: Queryable, ref: Required<RunRef>, token: number, result: RunResult, nowMs: number, run?: RunTiming): Promise<number> {
  const write = resultWrite(result, nowMs, run, pgText);
  return ownTransaction(db, async () => {
    await lockDelivery(db, ref);
    const { rows } = await db.query<{ repeats: unknown }>(
      `UPDATE subscriber_runs
          SET status = $5::text, error = coalesce($6::text, error), attempts = attempts + $7::integer, lease_token = $3::bigint, updated_at = $8::text,
              attempt_log = CASE WHEN $7::integer = 1 THEN ${appendAttempt(entryAt(9, "attempts + 1"))} ELSE ${deferredAttempt(9)} END
        WHERE ${RUN} AND ${RESULT_FENCE}
        RETURNING coalesce((attempt_log -> -1 ->> 'count')::bigint, 1) AS repeats`,
      [ref.source, ref.id, token, ref.subscriber, write.status, write.error, write.counted, isoTime(nowMs), write.entry],
    );
    if (!rows[0]) return 0;
    await summarise(db, ref, nowMs);
    return toNumber(rows[0].repeats);
  });
}

/**
 * Locks the delivery's row for the rest of the transaction: the first statement of every
 * transaction that moves one of its runs and then its summary. Two runs of one delivery settling at
 * once would otherwise each summarise without seeing the other's result (read committed: each sees
 * the other still unsettled), and the summary would stay `processing`. D1 runs one statement at a time.
 */
export async function lockDelivery(db: Queryable, ref: DeliveryRef): Promise<void> {
  await db.query("SELECT 1 FROM deliveries WHERE source = $1 AND id = $2 FOR UPDATE", [ref.source, ref.id]);
}

/** The delivery's row as the summary of its runs (D1's `summarise`); in a transaction, after `lockDelivery`. */
export async function summarise(db: Queryable, ref: DeliveryRef, nowMs: number): Promise<void> {
  const runs = "FROM subscriber_runs AS r WHERE r.source = $1 AND r.id = $2";
  await db.query(
    `UPDATE deliveries
        SET status = CASE WHEN EXISTS (SELECT 1 ${runs} AND r.status IN ('received', 'processing')) THEN 'processing'
                          WHEN EXISTS (SELECT 1 ${runs} AND r.status = 'failed') THEN 'failed' ELSE 'done' END,
            error = (SELECT string_agg(r.subscriber || ': ' || coalesce(r.error, ''), '; ' ORDER BY r.subscriber) ${runs} AND r.status = 'failed'),
            handled = CASE WHEN EXISTS (SELECT 1 ${runs} AND r.status IN ('received', 'processing')) THEN handled ELSE true END,
            updated_at = $3::text
      WHERE source = $1 AND id = $2 AND fanout IS NOT NULL`,
    [ref.source, ref.id, isoTime(nowMs)],
  );
}
