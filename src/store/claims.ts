import { attemptEntryFrom, type AttemptEntry } from "./attempts";
import { headersFromColumn, type StoredHeaders } from "./headers";

/**
 * What a claim hands the consumer, and the error the lease fence raises. Shared by the D1 store
 * (d1/lifecycle.ts) and the Postgres store (postgres/lifecycle.ts), and by the consumer through index.ts.
 */

/**
 * The store's answer to a claim (D1: `readClaim` or `markTakeover`; Postgres: its claim statement),
 * asked once the lease granted one (the lease's answer is `LeaseClaim`, processing/lease/).
 */
export type StoreClaim =
  /**
   * The handler may run: this is its `attempt`-th run. `last` is the newest entry of its attempt
   * history (null: none), read by the claim's own statement: the consumer counts commits that kept
   * failing the same way by it (processing/consumer.ts `commitFailed`).
   */
  | { readonly kind: "run"; readonly attempt: number; readonly delivery: DeliveryToRun; readonly last: AttemptEntry | null }
  /** MAX_ATTEMPTS recorded runs ended without a result or failed: set aside as failed (a crash loop). */
  | { readonly kind: "gave_up"; readonly attempts: number; readonly error: string }
  /** Not claimable: already done or failed, deleted, or a newer claim got there first. */
  | { readonly kind: "gone" }
  /**
   * The delivery was fanned out to its subscribers (store/d1/subscriber-runs.ts): its row only
   * summarises their runs, each claimed on its own. The consumer makes sure theirs are queued.
   */
  | { readonly kind: "fanned" };

/** What the handler needs of a claimed delivery: the input of its run. */
export interface DeliveryToRun {
  readonly eventType: string | null;
  /** When the inbox stored it (ISO 8601, UTC): the order of arrival. */
  readonly receivedAt: string;
  readonly body: Uint8Array;
  /** The provider's Content-Type, from the stored request headers; null when none was stored. */
  readonly contentType: string | null;
  /** The request headers stored with it (credentials never are; none once retention cleared them): what subscribers' filters see. */
  readonly headers: StoredHeaders;
}

/**
 * The error the lease fence raises when a done mark comes from a run whose claim is no longer the
 * newest (D1: migrations/0006, trigger `deliveries_lease_fence`; Postgres: its own trigger).
 */
export const LEASE_LOST = "lease_lost";

/**
 * How the error of a delivery whose workers kept dying begins: written by a takeover's claim
 * (store/d1/lifecycle.ts `markTakeover`, and Postgres's twin statement), read nowhere else.
 */
export const GAVE_UP = "gave up: the worker kept crashing (";

/** A claim statement's row in either store, its body already bytes (null: none read). */
export interface ClaimRow {
  readonly status: string;
  readonly attempts: number;
  readonly error: string | null;
  readonly event_type: string | null;
  readonly received_at: string;
  /** A delivery's: set once it was fanned out (absent for a subscriber's run). */
  readonly fanout?: number | null;
  readonly content_type: unknown;
  /** The stored headers: D1's JSON text, or Postgres's parsed jsonb. */
  readonly headers?: unknown;
  readonly last_attempt: unknown;
  readonly body: Uint8Array | null;
}

/**
 * What a claim's row says (no row: gone). `attempts` counts the runs that ended; this one is the
 * next. A row whose body retention cleared is never claimable (a replay refuses it); an empty body is.
 */
export function claimFromRow(row: ClaimRow | undefined): StoreClaim {
  if (!row) return { kind: "gone" };
  // Before `failed`: a fanned-out delivery's status is its runs' summary, their dead letters their own.
  if (row.fanout !== undefined && row.fanout !== null) return { kind: "fanned" };
  if (row.status === "failed") return { kind: "gave_up", attempts: row.attempts, error: row.error ?? "" };
  const contentType = typeof row.content_type === "string" && row.content_type !== "" ? row.content_type : null;
  return {
    kind: "run",
    attempt: row.attempts + 1,
    delivery: { eventType: row.event_type, receivedAt: row.received_at, body: row.body ?? new Uint8Array(0), contentType, headers: storedHeaders(row.headers) },
    last: attemptEntryFrom(row.last_attempt),
  };
}

/** A claim row's headers, whichever form its store returns them in. */
function storedHeaders(value: unknown): StoredHeaders {
  if (value === null || value === undefined) return [];
  return headersFromColumn(typeof value === "string" ? value : JSON.stringify(value)) ?? [];
}
