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
import type { DeliveryRef } from "../../delivery-ref";
import { SqlStatement } from "../../sql";
import { attemptEntryFrom, attemptJson, type RunTiming } from "../attempts";
import { LEASE_LOST, type StoreClaim } from "../claims";
import { isoTime } from "../clock";
import type { CommitResult, Effect, Takeover } from "../store";
import { appendAttempt, deferredAttempt, entryAt } from "./attempt-log";
import { BODY_COLUMNS, bodyColumnsWhen, bodyFromRow, type BodyRow } from "./body";
import { isRaised, isStatementError, pgText, toNumber, type Connections, type Queryable } from "./client";
import { ownTransaction } from "./queryable";

/**
 * The stored `content-type` header (headers.ts: [[name, value], …], names lower-cased), read by the
 * claim's own statement (store/d1/lifecycle.ts says why). Null when none was stored.
 */
const CONTENT_TYPE = `(SELECT header ->> 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(headers) = 'array' THEN headers END) AS header
                        WHERE header ->> 0 = 'content-type' LIMIT 1) AS content_type`;

/** The newest entry of the attempt history (jsonb, null: none), read by the claim's own statement too. */
const LAST_ATTEMPT = "attempt_log -> -1 AS last_attempt";

/** How the error of a delivery whose workers kept dying begins (store/d1/lifecycle.ts `markTakeover`). */
const GAVE_UP = "gave up: the worker kept crashing (";

/**
 * Where a run's result may land, for the token `$3`: the delivery is unsettled, and either no claim
 * newer than this one is recorded, or this run is the recorded takeover. Same rule as the trigger.
 */
const RESULT_FENCE = "status IN ('received', 'processing') AND (coalesce(lease_token, 0) < $3::bigint OR (lease_token = $3::bigint AND status = 'processing'))";

/** What a claim's statement returns. */
interface ClaimRow extends BodyRow {
  status: string;
  attempts: number;
  error: string | null;
  event_type: string | null;
  content_type: string | null;
  last_attempt: unknown;
}

/**
 * The claim of a leased delivery: for a free lease a read (`readClaim`), for a takeover the fenced
 * write of `markTakeover`, in one statement either way.
 * @example
 * const claimed = await claim(db, { source: "stripe", id: "evt_1" }, token, null, Date.now());
 * if (claimed.kind === "run") await handle(claimed.delivery);
 */
export async function claim(db: Queryable, ref: DeliveryRef, token: number, takeover: Takeover | null, nowMs: number): Promise<StoreClaim> {
  const { rows } = takeover
    ? await markTakeover(db, ref, token, takeover.previousToken, takeover.maxAttempts, nowMs)
    : await readClaim(db, ref, token);
  return claimedDelivery(rows[0]);
}

/**
 * The claim of a delivery whose lease was free: reads what the handler needs, and writes nothing.
 * No row: done or failed already, or a takeover newer than `token` is recorded.
 */
function readClaim(db: Queryable, ref: DeliveryRef, token: number) {
  return db.query<ClaimRow>(
    `SELECT status, attempts, error, event_type, ${CONTENT_TYPE}, ${LAST_ATTEMPT}, ${BODY_COLUMNS} FROM deliveries
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
  const vanished = "status = 'processing' AND (lease_token = $6::bigint OR $6::bigint = 0)";
  const gaveUp = `${vanished} AND attempts + 1 >= $5::integer`;
  // The vanished run's entry, without a start time: the sweeper may have touched updated_at since.
  const vanishedEntry = entryAt(7, "attempts + 1");
  return db.query<ClaimRow>(
    `UPDATE deliveries
        SET status = CASE WHEN ${again} OR status = 'failed' THEN status WHEN ${gaveUp} THEN 'failed' ELSE 'processing' END,
            error = CASE WHEN ${again} OR status = 'failed' THEN error WHEN ${gaveUp} THEN '${GAVE_UP}' || (attempts + 1) || ' attempts without a result)' ELSE error END,
            attempts = CASE WHEN ${again} OR status = 'failed' THEN attempts WHEN ${vanished} THEN attempts + 1 ELSE attempts END,
            attempt_log = CASE WHEN NOT (${again}) AND ${vanished} THEN ${appendAttempt(vanishedEntry)} ELSE attempt_log END,
            lease_token = $3::bigint, updated_at = CASE WHEN status = 'failed' THEN updated_at ELSE $4::text END
      WHERE source = $1 AND id = $2
        AND ((${RESULT_FENCE}) OR (status = 'failed' AND (lease_token = $3::bigint OR lease_token = $6::bigint OR $6::bigint = 0)))
      RETURNING status, attempts, error, event_type, ${CONTENT_TYPE}, ${LAST_ATTEMPT}, ${bodyColumnsWhen("status = 'processing'")}`,
    [ref.source, ref.id, token, isoTime(nowMs), maxAttempts, previousToken, attemptJson("vanished", nowMs, undefined, "the worker's lease ran out without a result")],
  );
}

/** What a claim's row says (store/d1/lifecycle.ts `claimedDelivery`). */
function claimedDelivery(row: ClaimRow | undefined): StoreClaim {
  if (!row) return { kind: "gone" };
  if (row.status === "failed") return { kind: "gave_up", attempts: row.attempts, error: row.error ?? "" };
  // `attempts` counts the runs that ended; this one is the next. An empty body is a body.
  const contentType = typeof row.content_type === "string" && row.content_type !== "" ? row.content_type : null;
  return {
    kind: "run",
    attempt: row.attempts + 1,
    delivery: { eventType: row.event_type, body: bodyFromRow(row) ?? new Uint8Array(0), contentType },
    last: attemptEntryFrom(row.last_attempt),
  };
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
export async function commitDone(connections: Connections, ref: DeliveryRef, token: number, done: Done, nowMs: number): Promise<CommitResult> {
  const statements: { text: string; values: readonly unknown[] }[] = [];
  for (const effect of done.effects) {
    const statement = postgresStatement(effect);
    if (statement instanceof Error) return { kind: "refused", error: statement, permanent: true };
    statements.push(statement);
  }
  try {
    await connections.run((db) =>
      ownTransaction(db, async () => {
        const marked = await markDone(db, ref, token, done.handled, nowMs, done.run);
        if (marked === 0) throw new NoRowToMark(`delivery (${ref.source}, ${ref.id}) is not there to mark done`);
        // One statement each, whatever its text holds (queryable.ts): a second one hidden after a `;` is refused.
        for (const statement of statements) await db.query({ text: statement.text, values: statement.values, queryMode: "extended" });
      }),
    );
    return { kind: "committed" };
  } catch (error) {
    if (error instanceof NoRowToMark) return { kind: "lease_lost" };
    if (isStatementError(error) && !isLeaseLost(error)) return { kind: "refused", error, permanent: false };
    // A commit of ours may have landed although the connection failed before its answer: then it stands.
    if (await connections.run((db) => committedWith(db, ref, token))) return { kind: "committed" };
    if (isLeaseLost(error)) return { kind: "lease_lost" };
    throw error;
  }
}

/** The fenced done mark, which counts the run: the number of rows it changed (0 or 1). */
async function markDone(db: Queryable, ref: DeliveryRef, token: number, handled: boolean, nowMs: number, run?: RunTiming): Promise<number> {
  const result = await db.query(
    `UPDATE deliveries
        SET status = 'done', commit_token = $3::bigint, lease_token = $3::bigint, attempts = attempts + 1, handled = $4::boolean, error = NULL,
            updated_at = $5::text, attempt_log = ${appendAttempt(entryAt(6, "attempts + 1"))}
      WHERE source = $1 AND id = $2`,
    [ref.source, ref.id, token, handled, isoTime(nowMs), attemptJson(handled ? "done" : "unhandled", nowMs, run)],
  );
  return result.rowCount ?? 0;
}

/**
 * Transaction control as an effect would break the one transaction (a COMMIT in the middle commits
 * the mark without the rest, a ROLLBACK undoes the mark and the rest autocommits): refused. Each
 * effect runs as one statement (extended protocol), so only its first keyword can be one of these;
 * comments before it are skipped (LEADING_COMMENTS), as the server skips them.
 */
const TRANSACTION_CONTROL = /^(BEGIN|START|COMMIT|END|ROLLBACK|ABORT|SAVEPOINT|RELEASE|PREPARE\s+TRANSACTION)\b/i;
/** Whitespace and `--` line comments at the start of a statement (block comments, which Postgres nests, are `statementStart`'s). */
const LEADING_SPACE_OR_LINE_COMMENT = /^(\s+|--[^\n]*(\n|$))+/;

/**
 * The text of a statement from its first keyword: whitespace and comments skipped, nested block
 * comments included. An unterminated comment leaves "" (the server refuses such a statement anyway).
 */
export function statementStart(text: string): string {
  let rest = text;
  for (;;) {
    rest = rest.replace(LEADING_SPACE_OR_LINE_COMMENT, "");
    if (!rest.startsWith("/*")) return rest;
    let depth = 0;
    let index = 0;
    while (index < rest.length) {
      if (rest.startsWith("/*", index)) {
        depth++;
        index += 2;
      } else if (rest.startsWith("*/", index)) {
        depth--;
        index += 2;
        if (depth === 0) break;
      } else index++;
    }
    if (depth !== 0) return "";
    rest = rest.slice(index);
  }
}

/**
 * A handler's effect as Postgres text and values: a portable `sql` statement rendered with `$N`.
 * A D1 prepared statement cannot run here: an Error says so (refused, permanent).
 */
function postgresStatement(effect: Effect): { text: string; values: readonly unknown[] } | Error {
  if (!(effect instanceof SqlStatement)) {
    return new Error("a D1 statement (env.DB.prepare) cannot run in the Postgres store: write the handler's effects with ctx.sql");
  }
  const text = effect.render((position) => `$${position}`);
  if (TRANSACTION_CONTROL.test(statementStart(text))) return new Error(`an effect may not control the transaction it runs in: ${statementStart(text).slice(0, 40)}`);
  // pg binds a Uint8Array as bytes, a bigint and a boolean as their text.
  return { text, values: effect.values };
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
 * A retryable failure: back to `received` with the error, the run counted. Fenced: false when the
 * fence refused (a newer claim, or the delivery settled).
 * @example
 * await markRetrying(db, ref, token, "HTTP 503 from the backend", Date.now(), { startedAtMs });
 */
export async function markRetrying(db: Queryable, ref: DeliveryRef, token: number, error: string, nowMs: number, run?: RunTiming): Promise<boolean> {
  const text = pgText(error);
  const result = await db.query(
    `UPDATE deliveries SET status = 'received', error = $4::text, attempts = attempts + 1, lease_token = $3::bigint, updated_at = $5::text,
            attempt_log = ${appendAttempt(entryAt(6, "attempts + 1"))}
      WHERE source = $1 AND id = $2 AND ${RESULT_FENCE}`,
    [ref.source, ref.id, token, text, isoTime(nowMs), attemptJson("retry", nowMs, run, text)],
  );
  return (result.rowCount ?? 0) > 0;
}

/**
 * A run cut short or deferred (not the handler's fault): back to `received`, the run not counted,
 * `why` in its history, merged with a deferral just before it for the same reason. Fenced.
 * @example
 * await markDeferred(db, ref, token, Date.now(), { startedAtMs }, "deferred: the forward destination is busy");
 */
export async function markDeferred(
  db: Queryable,
  ref: DeliveryRef,
  token: number,
  nowMs: number,
  run?: RunTiming,
  why = "cut short: the consumer invocation's time ran out",
): Promise<number> {
  const { rows } = await db.query<{ repeats: unknown }>(
    `UPDATE deliveries SET status = 'received', lease_token = $3::bigint, updated_at = $4::text, attempt_log = ${deferredAttempt(5)}
      WHERE source = $1 AND id = $2 AND ${RESULT_FENCE}
      RETURNING coalesce((attempt_log -> -1 ->> 'count')::bigint, 1) AS repeats`,
    [ref.source, ref.id, token, isoTime(nowMs), attemptJson("deferred", nowMs, run, `${pgText(why)} (not counted)`)],
  );
  return rows[0] ? toNumber(rows[0].repeats) : 0;
}

/**
 * Sets a delivery aside as `failed` with its error, the run counted. Fenced.
 * @example
 * await markFailed(db, ref, token, "payment_intent.succeeded has no data.object.amount", Date.now(), { startedAtMs });
 */
export async function markFailed(db: Queryable, ref: DeliveryRef, token: number, error: string, nowMs: number, run?: RunTiming): Promise<boolean> {
  const text = pgText(error);
  const result = await db.query(
    `UPDATE deliveries SET status = 'failed', error = $4::text, attempts = attempts + 1, lease_token = $3::bigint, updated_at = $5::text,
            attempt_log = ${appendAttempt(entryAt(6, "attempts + 1"))}
      WHERE source = $1 AND id = $2 AND ${RESULT_FENCE}`,
    [ref.source, ref.id, token, text, isoTime(nowMs), attemptJson("failed", nowMs, run, text)],
  );
  return (result.rowCount ?? 0) > 0;
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
