import type { AttemptEntry } from "./attempts";

/**
 * What a claim hands the consumer, and the error the lease fence raises. Shared by the D1 store
 * (d1/lifecycle.ts) and the Postgres store (postgres/lifecycle.ts), and by the consumer through index.ts.
 */

/** What a claim found (D1: `readClaim` or `markTakeover`; Postgres: its claim statement). */
export type Claimed =
  /**
   * The handler may run: this is its `attempt`-th run. `last` is the newest entry of its attempt
   * history (null: none), read by the claim's own statement: the consumer counts commits that kept
   * failing the same way by it (processing/consumer.ts `commitFailed`).
   */
  | { readonly kind: "run"; readonly attempt: number; readonly delivery: ClaimedDelivery; readonly last: AttemptEntry | null }
  /** MAX_ATTEMPTS recorded runs ended without a result or failed: set aside as failed (a crash loop). */
  | { readonly kind: "gave_up"; readonly attempts: number; readonly error: string }
  /** Not claimable: already done or failed, deleted, or a newer claim got there first. */
  | { readonly kind: "gone" };

/** What the handler needs of a claimed delivery. */
export interface ClaimedDelivery {
  readonly eventType: string | null;
  readonly body: Uint8Array;
  /** The provider's Content-Type, from the stored request headers; null when none was stored. */
  readonly contentType: string | null;
}

/**
 * The error the lease fence raises when a done mark comes from a run whose claim is no longer the
 * newest (D1: migrations/0006, trigger `deliveries_lease_fence`; Postgres: its own trigger).
 */
export const LEASE_LOST = "lease_lost";
