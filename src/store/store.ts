/**
 * The store: every read and write of deliveries, behind one interface, in D1 (the default) or in
 * Postgres through Hyperdrive (docs/postgres.md). The receiver, the consumer, the
 * sweeper, the admin API and the dashboard see only this; `openStore` (index.ts) picks the
 * implementation from the bindings, and nothing outside src/store knows which one runs.
 *
 * Both keep the same promises:
 * - `record` stores a delivery once, the database deciding duplicates (by id, or by content digest
 *   for providers whose id is not signed), and throws rather than report a row it did not save;
 * - every write after a claim is fenced by the lease token: a run's result lands only while the
 *   delivery is unsettled and no newer claim is recorded, and only once (store/d1/lifecycle.ts);
 * - `commitDone` commits the handler's effects and the done mark in one transaction, or nothing.
 *
 * Times (`nowMs`) are passed in, so that tests and the sweeper decide the clock.
 */
import type { DeliveryRef } from "../delivery-ref";
import type { AlertStore } from "./alerts";
import type { Effect } from "../sql";
import type { RunTiming } from "./attempts";
import type { StoreClaim } from "./claims";
import type { DeliveryDetail, DeliveryStats, DeliverySummary } from "./deliveries";
import type { ListingPage, ListingQuery } from "./listing-query";
import type { NewDelivery, RecordOutcome } from "./new-delivery";
import type { ProviderMessage, ProviderMessageCount } from "./provider-messages";
import type { FailedFilter, ReplayState } from "./replay-state";
import type { Overview } from "./snapshot";
import type { RetentionResult, StrandedCutoffs } from "./sweeping";

export type { Effect } from "../sql";

/** The part of an execution context the store needs (Hono's and the runtime's types differ). */
export interface WaitUntil {
  waitUntil(promise: Promise<unknown>): void;
}

/** A takeover's claim: the previous holder's lease ran out without a word (store/d1/lifecycle.ts). */
export interface Takeover {
  /** The token the previous holder had; 0 when the lease object does not know it. */
  readonly previousToken: number;
  readonly maxAttempts: number;
}

/** What became of a done commit. Infrastructure errors (the database down, a lost connection) are thrown. */
export type CommitResult =
  /** The effects and the done mark landed (perhaps in an earlier try that reported an error). */
  | { readonly kind: "committed" }
  /** A newer claim was recorded: its result stands, and this run committed nothing. */
  | { readonly kind: "lease_lost" }
  /**
   * The database refused the handler's own effects (a constraint, the order guard's stale version,
   * bad SQL): nothing committed, and the run counts like a handler error. `permanent` when no
   * retry can help (an effect this store cannot run).
   */
  | { readonly kind: "refused"; readonly error: unknown; readonly permanent: boolean };

export interface Store {
  // The receiver.
  /** Stores a delivery unless one with the same (source, id) or (source, content digest) exists. Throws when the database fails. */
  record(delivery: NewDelivery, ctx: WaitUntil): Promise<RecordOutcome>;

  // The consumer: a delivery's state as processing moves it (store/d1/lifecycle.ts).
  /** The claim of a leased delivery: a read, or for a takeover a fenced write first. */
  claim(ref: DeliveryRef, token: number, takeover: Takeover | null, nowMs: number): Promise<StoreClaim>;
  /** The done mark with the handler's effects, in one fenced transaction. */
  commitDone(ref: DeliveryRef, token: number, done: { readonly handled: boolean; readonly effects: readonly Effect[]; readonly run?: RunTiming }, nowMs: number): Promise<CommitResult>;
  /** A retryable failure recorded, the run counted. False when the fence refused. */
  markRetrying(ref: DeliveryRef, token: number, error: string, nowMs: number, run?: RunTiming): Promise<boolean>;
  /**
   * A run cut short or deferred, not counted: how many deferrals in a row with this `why` the
   * delivery's attempt history now shows (this one included; 1 after a different entry); 0 when the
   * fence refused.
   */
  markDeferred(ref: DeliveryRef, token: number, nowMs: number, run?: RunTiming, why?: string): Promise<number>;
  /** Set aside as failed, the run counted. False when the fence refused. */
  markFailed(ref: DeliveryRef, token: number, error: string, nowMs: number, run?: RunTiming): Promise<boolean>;
  /** The order guard's read: the newest version applied for `entity`, or null (processing/order-guard.ts). */
  entityVersion(entity: string): Promise<number | null>;

  // The sweeper.
  /** Up to `limit` deliveries nobody works on, their `updated_at` touched so the next sweep waits. */
  takeStranded(cutoffs: StrandedCutoffs, nowMs: number, limit: number): Promise<DeliveryRef[]>;
  applyRetention(deleteBeforeMs: number, clearBodiesBeforeMs: number, limit: number): Promise<RetentionResult>;
  /** Carries the overview's counts forward and refreshes its snapshot when it is old (store/d1/overview.ts). */
  maintainOverview(nowMs: number): Promise<void>;

  // The admin API and the dashboard.
  /** Exact counts (a full count: not for polling). */
  stats(nowMs: number): Promise<DeliveryStats>;
  /** The overview's snapshot, cheap to poll. */
  overview(nowMs: number): Promise<Overview>;
  list(query: ListingQuery): Promise<ListingPage>;
  /** One id looked up in each of `sources`, newest first. */
  findById(sources: readonly string[], id: string): Promise<DeliverySummary[]>;
  get(ref: DeliveryRef): Promise<DeliveryDetail | null>;
  replayState(ref: DeliveryRef): Promise<ReplayState | null>;
  /** A settled delivery back to `received`, attempts 0, when its status is one of `from` and its body is kept. */
  resetForReplay(ref: DeliveryRef, from: readonly ("failed" | "done")[], nowMs: number): Promise<boolean>;
  resetFailedForReplay(filter: FailedFilter, limit: number, nowMs: number): Promise<DeliveryRef[]>;
  countFailed(filter: FailedFilter): Promise<number>;

  // Rotation (the receiver and the admin API's sources).
  /** Notes that a source's previous secret verified a delivery at `nowMs`. */
  notePreviousSecret(source: string, nowMs: number): Promise<void>;
  /** When each source's previous secret last verified a delivery (ISO time), by source. */
  previousSecretUses(): Promise<Record<string, string>>;
  /** Counts a provider message that is not a delivery (provider-messages.ts). */
  recordProviderMessage(message: ProviderMessage, nowMs: number): Promise<void>;
  providerMessages(): Promise<ProviderMessageCount[]>;

  /** Alerting: its counters, incidents and outbox (store/alerts.ts). */
  readonly alerts: AlertStore;
}

/**
 * A store for many operations of one invocation (a queue batch, a sweep): `close()` ends what it
 * holds open (on Postgres, the few connections its operations share), and must be reached when
 * the work is done, in `finally`. Nothing may use it after.
 */
export interface ClosableStore extends Store {
  close(): Promise<void>;
}
