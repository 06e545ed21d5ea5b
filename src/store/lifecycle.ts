/**
 * The delivery's state in D1 as processing moves it: received → processing → done | failed.
 *
 * Every write after the claim is fenced by the lease token, so a worker whose lease ran out
 * cannot overwrite the state that the worker who took over wrote. The consumer is the only
 * caller: one owner for a delivery's state.
 */
import type { DeliveryRef } from "../processing/messages";
import { isoTime } from "./clock";
import { blobBytes, type BlobColumn } from "./columns";

/** What the handler needs of a claimed delivery. */
export interface ClaimedDelivery {
  readonly eventType: string | null;
  readonly body: Uint8Array;
}

/** The D1 error the lease fence raises (migrations/0001, trigger `deliveries_lease_fence`). */
export const LEASE_LOST = "lease_lost";

/**
 * Marks a delivery `processing` under `token` and returns it, in one statement (see
 * `claimedDelivery`). Its result has no row when the delivery is no longer claimable: already
 * done or failed, deleted, or a newer token already claimed it.
 */
export function markProcessing(db: D1Database, ref: DeliveryRef, token: number, attempt: number, nowMs: number): D1PreparedStatement {
  return db
    .prepare(
      `UPDATE deliveries
          SET status = 'processing', attempts = ?3, lease_token = ?4, updated_at = ?5
        WHERE source = ?1 AND id = ?2
          AND status IN ('received', 'processing')
          AND coalesce(lease_token, 0) < ?4
        RETURNING event_type, body`,
    )
    .bind(ref.source, ref.id, attempt, token, isoTime(nowMs));
}

/** The delivery a `markProcessing` result returned, or null when it was not claimable. */
export function claimedDelivery(result: D1Result): ClaimedDelivery | null {
  const row = result.results[0] as { event_type: string | null; body: BlobColumn } | undefined;
  if (!row) return null;
  // A forced replay of a done delivery whose body retention already cleared hands over no bytes.
  return { eventType: row.event_type, body: blobBytes(row.body) ?? new Uint8Array(0) };
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

/** Commits the done mark and the handler's effects as one transaction. */
export async function commitDone(
  db: D1Database,
  ref: DeliveryRef,
  token: number,
  handled: boolean,
  effects: readonly D1PreparedStatement[],
  nowMs: number,
): Promise<"committed" | "lease_lost"> {
  try {
    await db.batch([markDone(db, ref, token, handled, nowMs), ...effects]);
    return "committed";
  } catch (error) {
    if (isLeaseLost(error)) return "lease_lost";
    throw error;
  }
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
 * Sets a delivery aside as `failed` with its error. With a token it is fenced to that lease;
 * without one (the dead-letter recorder) it fails whatever is not yet settled.
 */
export async function markFailed(db: D1Database, ref: DeliveryRef, token: number | null, error: string, nowMs: number): Promise<boolean> {
  const result = await db
    .prepare(
      `UPDATE deliveries SET status = 'failed', error = ?4, updated_at = ?5
        WHERE source = ?1 AND id = ?2 AND status IN ('received', 'processing')
          AND (?3 IS NULL OR lease_token = ?3)`,
    )
    .bind(ref.source, ref.id, token, error, isoTime(nowMs))
    .run();
  return result.meta.changes > 0;
}
