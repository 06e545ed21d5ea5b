/**
 * A delivery's state as processing moves it, in Postgres: the same statements and rules as D1's
 * (store/d1/lifecycle.ts, which says why each is as it is), with `$N` parameters and jsonb.
 *
 * - A free lease's claim only reads the row (`readClaim`); a takeover is recorded before its handler
 *   runs (`markTakeover`), which fences the vanished worker.
 * - Every result is fenced by the lease token (`RESULT_FENCE`, and the trigger `deliveries_lease_fence`
 *   of migrations-postgres/0001 for the done mark): it lands only while the delivery is unsettled and
 *   no later claim is recorded, and only once.
 * - `commitDone` runs the done mark and the handler's effects in one transaction on one client, the
 *   mark first: the fence's exception rolls back every effect with it.
 *
 * Each function opens a client of its own (client.ts): the consumer runs the deliveries of a batch
 * at once, and Hyperdrive pools the connections.
 */
import { isSubscriberRun, type DeliveryRef, type RunRef } from "../../delivery-ref";
import { CONTENT_TYPE, RESULT_FENCE } from "./run-sql";
import { attemptJson, type RunTiming } from "../attempts";
import { claimFromRow, GAVE_UP, LEASE_LOST, type ClaimRow, type StoreClaim } from "../claims";
import { isoTime } from "../clock";
import { judgeFailedCommit } from "../commit-outcome";
import { resultWrite, type RunResult } from "../run-result";
import type { CommitResult, Effect, Takeover } from "../store";
import { appendAttempt, deferredAttempt, entryAt } from "./attempt-log";
import { BODY_COLUMNS, bodyColumnsWhen, bodyFromRow, type BodyRow } from "./body";
import { isRaised, isStatementError, pgText, toNumber, type Connections, type Queryable } from "./client";
import { postgresStatement } from "./effects";
import { claimRun, lockDelivery, markRunDone, recordRunResult, runCommittedWith, summarise } from "./subscriber-runs";
import { ownTransaction } from "./queryable";


/** The newest entry of the attempt history (jsonb, null: none), read by the claim's own statement too. */
const LAST_ATTEMPT = "attempt_log -> -1 AS last_attempt";



/**
 * The claim of a leased delivery: for a free lease a read (`readClaim`), for a takeover the fenced
 * write of `markTakeover`, in one statement either way.
 * @example
 * const claimed = await claim(db, { source: "stripe", id: "evt_1" }, token, null, Date.now());
 * if (claimed.kind === "run") await handle(claimed.delivery);
 */
export async function claim(db: Queryable, ref: RunRef, token: number, takeover: Takeover | null, nowMs: number): Promise<StoreClaim> {
  if (isSubscriberRun(ref)) {
    const run = await claimRun(db, ref, token, takeover, nowMs);
    return claimFromRow(run && { ...run, body: bodyFromRow(run) });
  }
  const { rows } = takeover
    ? await markTakeover(db, ref, token, takeover.previousToken, takeover.maxAttempts, nowMs)
    : await readClaim(db, ref, token);
  const row = rows[0];
  return claimFromRow(row && { ...row, body: bodyFromRow(row) });
}

/**
 * The claim of a delivery whose lease was free: reads what the handler needs, and writes nothing.
 * No row: done or failed already, or a takeover newer than `token` is recorded.
 */
function readClaim(db: Queryable, ref: DeliveryRef, token: number) {
  return db.query<ClaimRow & BodyRow>(
    `SELECT status, attempts, error, event_type, received_at, fanout, headers, ${CONTENT_TYPE}, ${LAST_ATTEMPT}, ${BODY_COLUMNS} FROM deliveries
      WHERE source = $1 AND id = $2 AND status IN ('received', 'processing') AND coalesce(lease_token, 0) < $3::bigint`,
    [ref.source, ref.id, token],
  );
}

/**
 * The claim of a takeover, recorded before its handler runs: `processing` under `token`. The vanished
 * run (previous token `previousToken`, 0 when unknown) is counted only when it was a recorded
 * takeover itself; when it was the `maxAttempts`-th, the delivery is set `failed` instead. Run again
 * with the same token, it returns the row as the first run left it and counts nothing twice. A row
 * the previous holder set `failed` without settling its lease is returned unchanged, for its dead
 * letter to be sent again (store/d1/lifecycle.ts says why).
 */
function markTakeover(db: Queryable, ref: DeliveryRef, token: number, previousToken: number, maxAttempts: number, nowMs: number) {
  // Null-safe, as SQLite's `IS`: a row without a token is not this claim's.
  const again = "lease_token IS NOT DISTINCT FROM $3::bigint";
  // A fanned-out delivery's row is its subscribers' summary: no run of its own to count (subscriber-runs.ts).
  const vanished = "status = 'processing' AND fanout IS NULL AND (lease_token = $6::bigint OR $6::bigint = 0)";
  const gaveUp = `${vanished} AND attempts + 1 >= $5::integer`;
  // The vanished run's entry, without a start time: the sweeper may have touched updated_at since.
  const vanishedEntry = entryAt(7, "attempts + 1");
  return db.query<ClaimRow & BodyRow>(
    `UPDATE deliveries
        SET status = CASE WHEN ${again} OR status = 'failed' THEN status WHEN ${gaveUp} THEN 'failed' ELSE 'processing' END,
            error = CASE WHEN ${again} OR status = 'failed' THEN error WHEN ${gaveUp} THEN '${GAVE_UP}' || (attempts + 1) || ' attempts without a result)' ELSE error END,
            attempts = CASE WHEN ${again} OR status = 'failed' THEN attempts WHEN ${vanished} THEN attempts + 1 ELSE attempts END,
            attempt_log = CASE WHEN NOT (${again}) AND ${vanished} THEN ${appendAttempt(vanishedEntry)} ELSE attempt_log END,
            lease_token = $3::bigint, updated_at = CASE WHEN status = 'failed' THEN updated_at ELSE $4::text END
      WHERE source = $1 AND id = $2
        AND ((${RESULT_FENCE}) OR (status = 'failed' AND (lease_token = $3::bigint OR lease_token = $6::bigint OR $6::bigint = 0)))
      RETURNING status, attempts, error, event_type, received_at, fanout, headers, ${CONTENT_TYPE}, ${LAST_ATTEMPT}, ${bodyColumnsWhen("status = 'processing'")}`,
    [ref.source, ref.id, token, isoTime(nowMs), maxAttempts, previousToken, attemptJson("vanished", nowMs, undefined, "the worker's lease ran out without a result")],
  );
}

/** What a done commit carries (store.ts `Store.commitDone`). */
export interface Done {
  readonly handled: boolean;
  readonly effects: readonly Effect[];
  readonly run?: RunTiming;
}

/**
 * Thrown inside the commit's transaction when the done mark found no row (deleted under a worker):
 * nothing to mark done, so the effects must not commit either. D1 would commit them without a mark.
 */
class NoRowToMark extends Error {}

/**
 * The done mark and the handler's effects in one transaction, the mark first, fenced by `token`.
 * A stale token commits nothing (`lease_lost`); an effect the database refuses commits nothing
 * (`refused`); infrastructure errors are thrown, unless the commit landed after all.
 * @example
 * const result = await commitDone(clientPerOperation(env.HYPERDRIVE), ref, token, { handled: true, effects: [sql`INSERT INTO payments …`] }, Date.now());
 */
export async function commitDone(connections: Connections, ref: RunRef, token: number, done: Done, nowMs: number): Promise<CommitResult> {
  const statements: { text: string; values: readonly unknown[] }[] = [];
  for (const effect of done.effects) {
    const statement = postgresStatement(effect);
    if (statement instanceof Error) return { kind: "refused", error: statement, permanent: true };
    statements.push(statement);
  }
  try {
    await connections.run((db) =>
      ownTransaction(db, async () => {
        // A subscriber's run has its own row (subscriber-runs.ts), and moves its delivery's summary.
        if (isSubscriberRun(ref)) await lockDelivery(db, ref);
        const marked = isSubscriberRun(ref) ? await markRunDone(db, ref, token, done.handled, nowMs, done.run) : await markDone(db, ref, token, done.handled, nowMs, done.run);
        if (marked === 0) throw new NoRowToMark(`delivery (${ref.source}, ${ref.id}) is not there to mark done`);
        // One statement each, whatever its text holds (queryable.ts): a second one hidden after a `;` is refused.
        for (const statement of statements) await db.query({ text: statement.text, values: statement.values, queryMode: "extended" });
        if (isSubscriberRun(ref)) await summarise(db, ref, nowMs);
      }),
    );
    return { kind: "committed" };
  } catch (error) {
    if (error instanceof NoRowToMark) return { kind: "lease_lost" };
    // A commit of ours may have landed although the connection failed before its answer: then it stands.
    const committed = () => connections.run((db) => (isSubscriberRun(ref) ? runCommittedWith(db, ref, token) : committedWith(db, ref, token)));
    return judgeFailedCommit(error, { isStatementError, isLeaseLost, committed });
  }
}

/** The fenced done mark, which counts the run: the number of rows it changed (0 or 1). */
async function markDone(db: Queryable, ref: DeliveryRef, token: number, handled: boolean, nowMs: number, run?: RunTiming): Promise<number> {
  const result = await db.query(
    `UPDATE deliveries
        SET status = 'done', commit_token = $3::bigint, lease_token = $3::bigint, attempts = attempts + 1, handled = $4::boolean, error = NULL,
            updated_at = $5::text, attempt_log = ${appendAttempt(entryAt(6, "attempts + 1"))}, subscriber = coalesce($7::text, subscriber)
      WHERE source = $1 AND id = $2`,
    [ref.source, ref.id, token, handled, isoTime(nowMs), attemptJson(handled ? "done" : "unhandled", nowMs, run), run?.subscriber ?? null],
  );
  return result.rowCount ?? 0;
}

/**
 * True when the delivery is done under `token`: a commit of ours landed although its connection
 * failed before the answer (a second try then meets the fence, which is not a lost lease).
 */
export async function committedWith(db: Queryable, ref: DeliveryRef, token: number): Promise<boolean> {
  const { rows } = await db.query("SELECT 1 AS yes FROM deliveries WHERE source = $1 AND id = $2 AND status = 'done' AND commit_token = $3::bigint", [
    ref.source,
    ref.id,
    token,
  ]);
  return rows.length > 0;
}

/** True for the exception the lease fence raises. */
export function isLeaseLost(error: unknown): boolean {
  return isRaised(error, LEASE_LOST);
}

/**
 * A run's result other than done (store/run-result.ts), in one fenced statement, as D1's
 * `recordResult`: 0 when the fence refused; for a deferral the number in a row with its reason; else 1.
 * @example
 * await recordResult(db, ref, token, { kind: "retry", error: "HTTP 503 from the backend" }, Date.now(), { startedAtMs });
 */
export async function recordResult(db: Queryable, ref: RunRef, token: number, result: RunResult, nowMs: number, run?: RunTiming): Promise<number> {
  if (isSubscriberRun(ref)) return recordRunResult(db, ref, token, result, nowMs, run);
  const write = resultWrite(result, nowMs, run, pgText);
  const { rows } = await db.query<{ repeats: unknown }>(
    `UPDATE deliveries
        SET status = $4::text, error = coalesce($5::text, error), attempts = attempts + $6::integer, lease_token = $3::bigint, updated_at = $7::text,
            attempt_log = CASE WHEN $6::integer = 1 THEN ${appendAttempt(entryAt(8, "attempts + 1"))} ELSE ${deferredAttempt(8)} END,
            subscriber = coalesce($9::text, subscriber)
      WHERE source = $1 AND id = $2 AND ${RESULT_FENCE}
      RETURNING coalesce((attempt_log -> -1 ->> 'count')::bigint, 1) AS repeats`,
    [ref.source, ref.id, token, write.status, write.error, write.counted, isoTime(nowMs), write.entry, run?.subscriber ?? null],
  );
  return rows[0] ? toNumber(rows[0].repeats) : 0;
}

/**
 * The order guard's read: the newest version applied for `entity`, or null.
 * @example
 * const applied = await entityVersion(db, "stripe:customer:cus_123");
 */
export async function entityVersion(db: Queryable, entity: string): Promise<number | null> {
  const { rows } = await db.query<{ version: string }>("SELECT version FROM entity_versions WHERE entity = $1", [entity]);
  return rows[0] ? toNumber(rows[0].version) : null;
}
