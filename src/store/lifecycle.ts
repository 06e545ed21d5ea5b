/**
 * The delivery's state in D1 as processing moves it: received → processing → done | failed.
 *
 * Every write after the claim is fenced by the lease token, so a worker whose lease ran out
 * cannot overwrite the state that the worker who took over wrote. The consumer is the only
 * caller: one owner for a delivery's state.
 */
import type { DeliveryRef } from "../processing/messages";
import { isoTime } from "./clock";
import { bodyColumns, bodyFromRow } from "./columns";

/** What a `markProcessing` statement found. */
export type Claimed =
  /** The handler may run: this is its `attempt`-th run. */
  | { readonly kind: "run"; readonly attempt: number; readonly delivery: ClaimedDelivery }
  /** The handler started MAX_ATTEMPTS times and its last run vanished without a result: set aside as failed. */
  | { readonly kind: "gave_up"; readonly attempts: number; readonly error: string }
  /** Not claimable: already done or failed, deleted, or a newer claim got there first. */
  | { readonly kind: "gone" };

/** What the handler needs of a claimed delivery. */
export interface ClaimedDelivery {
  readonly eventType: string | null;
  readonly body: Uint8Array;
}

/** The D1 error the lease fence raises (migrations/0001, trigger `deliveries_lease_fence`). */
export const LEASE_LOST = "lease_lost";

/** How the error of a delivery whose workers kept dying begins (see `markProcessing`). */
const GAVE_UP = "gave up: the worker kept crashing (";

/**
 * Claims a delivery in D1 under `token`, in one statement, and counts the attempt: `attempts`
 * goes up here, when the handler is about to run, so a claim that never got this far (D1 or the
 * lease object failing) uses up nothing.
 *
 * The crash-loop check is part of the same statement: when the previous holder's lease ran out
 * (`takeover`) while the row still says `processing` (its handler started and never reported),
 * and that was the MAX_ATTEMPTS-th run, the delivery is set `failed` instead of running again.
 * A run whose worker reported a failure moved the row back to `received` first, so the check
 * only ever ends a delivery whose last run vanished.
 *
 * Running it again with the same token is harmless (a batch that committed but reported an
 * error is retried statement by statement): the row is returned again, the attempt not counted
 * twice. SQLite evaluates every SET expression against the row as it was.
 */
export function markProcessing(
  db: D1Database,
  ref: DeliveryRef,
  token: number,
  takeover: boolean,
  maxAttempts: number,
  nowMs: number,
): D1PreparedStatement {
  const gaveUp = "?6 AND status = 'processing' AND attempts >= ?5";
  return db
    .prepare(
      `UPDATE deliveries
          SET status = CASE WHEN ${gaveUp} AND lease_token < ?3 THEN 'failed' ELSE 'processing' END,
              error = CASE WHEN ${gaveUp} AND lease_token < ?3 THEN '${GAVE_UP}' || attempts || ' attempts without a result)' ELSE error END,
              attempts = CASE WHEN coalesce(lease_token, 0) = ?3 OR (${gaveUp}) THEN attempts ELSE attempts + 1 END,
              lease_token = ?3, updated_at = ?4
        WHERE source = ?1 AND id = ?2
          AND status IN ('received', 'processing')
          AND coalesce(lease_token, 0) <= ?3
        RETURNING status, attempts, error, event_type, ${bodyColumns("body", "status = 'processing'")}`,
    )
    .bind(ref.source, ref.id, token, isoTime(nowMs), maxAttempts, takeover ? 1 : 0);
}

/** What a `markProcessing` result says. */
export function claimedDelivery(result: D1Result): Claimed {
  const row = result.results[0] as { status: string; attempts: number; error: string; event_type: string | null } | undefined;
  if (!row) return { kind: "gone" };
  if (row.status === "failed") return { kind: "gave_up", attempts: row.attempts, error: row.error };
  // A row whose body retention cleared is never claimable (a replay refuses it); an empty body is.
  return { kind: "run", attempt: row.attempts, delivery: { eventType: row.event_type, body: bodyFromRow(row) ?? new Uint8Array(0) } };
}

/**
 * The fenced "done" write. It goes first in the handler's effect batch: when `token` is not the
 * current lease, the trigger aborts it and the whole batch rolls back (see `isLeaseLost`).
 */
export function markDone(db: D1Database, ref: DeliveryRef, token: number, handled: boolean, nowMs: number): D1PreparedStatement {
  return db
    .prepare(
      `UPDATE deliveries
          SET status = 'done', commit_token = ?3, handled = ?4, error = NULL, updated_at = ?5
        WHERE source = ?1 AND id = ?2`,
    )
    .bind(ref.source, ref.id, token, handled ? 1 : 0, isoTime(nowMs));
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

/** A retryable failure: back to `received` with the error, waiting for the retry. Fenced. */
export async function markRetrying(db: D1Database, ref: DeliveryRef, token: number, error: string, nowMs: number): Promise<boolean> {
  const result = await db
    .prepare(
      `UPDATE deliveries SET status = 'received', error = ?4, updated_at = ?5
        WHERE source = ?1 AND id = ?2 AND status = 'processing' AND lease_token = ?3`,
    )
    .bind(ref.source, ref.id, token, error, isoTime(nowMs))
    .run();
  return result.meta.changes > 0;
}

/**
 * Gives back an attempt that was cut short by the consumer's own time limit (not the handler's
 * fault): back to `received`, the attempt not counted. Fenced.
 */
export async function markDeferred(db: D1Database, ref: DeliveryRef, token: number, nowMs: number): Promise<boolean> {
  const result = await db
    .prepare(
      `UPDATE deliveries SET status = 'received', attempts = max(0, attempts - 1), updated_at = ?4
        WHERE source = ?1 AND id = ?2 AND status = 'processing' AND lease_token = ?3`,
    )
    .bind(ref.source, ref.id, token, isoTime(nowMs))
    .run();
  return result.meta.changes > 0;
}

/** Sets a delivery aside as `failed` with its error, fenced to the lease `token`. */
export async function markFailed(db: D1Database, ref: DeliveryRef, token: number, error: string, nowMs: number): Promise<boolean> {
  const result = await db
    .prepare(
      `UPDATE deliveries SET status = 'failed', error = ?4, updated_at = ?5
        WHERE source = ?1 AND id = ?2 AND status = 'processing' AND lease_token = ?3`,
    )
    .bind(ref.source, ref.id, token, error, isoTime(nowMs))
    .run();
  return result.meta.changes > 0;
}
