/**
 * What the sweeper asks of a store and gets back: which deliveries count as stranded, what a
 * retention run did, and the `inbox_marks` row where body pruning stopped. Shared by the D1 store
 * (d1/sweep.ts) and the Postgres store (postgres/sweep.ts), and by the sweeper through index.ts.
 */

/** The times before which an unfinished delivery, untouched since, counts as stranded. */
export interface StrandedCutoffs {
  /**
   * `received` with no attempt, unchanged since before this: its enqueue was lost, or its first run
   * is still at work (D1 records a run when it ends); that one's requeue meets its lease, busy.
   */
  readonly neverAttemptedBeforeMs: number;
  /** `received` after a failed attempt (waiting for its retry) since before this. */
  readonly retryWaitingBeforeMs: number;
  /** `processing` since before this: its lease (and its lease alarm) expired long ago. */
  readonly processingBeforeMs: number;
}

export interface RetentionResult {
  readonly deleted: number;
  readonly bodiesCleared: number;
}

/** The `inbox_marks` row that holds how far body pruning has come (a `received_at`). */
export const BODIES_PRUNED_THROUGH = "bodies_pruned_through";
