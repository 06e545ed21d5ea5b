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
import type { DeliveryRef, RunRef } from "../delivery-ref";
import type { AlertStore } from "./alerts";
import type { Effect } from "../sql";
import type { RunTiming } from "./attempts";
import type { StoreClaim } from "./claims";
import type { DeliveryDetail, DeliveryStats, DeliverySummary } from "./deliveries";
import type { ReplayFrom } from "./filtered";
import type { ListingPage, ListingQuery } from "./listing-query";
import type { NewDelivery, RecordOutcome } from "./new-delivery";
import type { ProviderMessage, ProviderMessageCount } from "./provider-messages";
import type { FailedFilter, ReplayState } from "./replay-state";
import type { RunResult } from "./run-result";
import type { SubscriberCount } from "./deliveries";
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

/**
 * The store's operations by the part of the Worker that uses them: each caller takes the slice it
 * needs (the consumer a `ProcessingStore`, the sweeper a `SweepingStore`…), so that what a module
 * can do to deliveries is read off its signature.
 */

/** The receiver's: storing deliveries, and what it notes of the providers. */
export interface ReceivingStore {
  /** Stores a delivery unless one with the same (source, id) or (source, content digest) exists. Throws when the database fails. */
  record(delivery: NewDelivery, ctx: WaitUntil): Promise<RecordOutcome>;
  /** Notes that a source's previous secret verified a delivery at `nowMs`. */
  notePreviousSecret(source: string, nowMs: number): Promise<void>;
  /** Counts a provider message that is not a delivery (provider-messages.ts). */
  recordProviderMessage(message: ProviderMessage, nowMs: number): Promise<void>;
}

/** The consumer's: a delivery's state as processing moves it (store/d1/lifecycle.ts). */
export interface ProcessingStore {
  /**
   * The claim of a leased delivery, or of one subscriber's run of a fanned-out one (`RunRef`): a
   * read, or for a takeover a fenced write first.
   */
  claim(ref: RunRef, token: number, takeover: Takeover | null, nowMs: number): Promise<StoreClaim>;
  /** The done mark with the handler's effects, in one fenced transaction. */
  commitDone(ref: RunRef, token: number, done: { readonly handled: boolean; readonly effects: readonly Effect[]; readonly run?: RunTiming }, nowMs: number): Promise<CommitResult>;
  /**
   * Any other result of a run (retry, failed, deferred: run-result.ts), in one fenced write. 0 when
   * the fence refused; for a deferral, how many deferrals in a row with its reason the attempt
   * history now shows (this one included; 1 after a different entry); else 1.
   */
  recordResult(ref: RunRef, token: number, result: RunResult, nowMs: number, run?: RunTiming): Promise<number>;
  /**
   * Fans a delivery out to its `subscribers` (two or more), fenced by its lease `token`: each gets a
   * run of its own, and the delivery's row becomes their summary. Safe to run again. False when
   * the fence refused.
   */
  fanOut(ref: DeliveryRef, token: number, subscribers: readonly string[], nowMs: number): Promise<boolean>;
  /** The subscribers of a fanned-out delivery whose runs are not settled; its summary brought up to date first. */
  pendingRuns(ref: DeliveryRef, nowMs: number): Promise<string[]>;
  /** The order guard's read: the newest version applied for `entity`, or null (processing/order-guard.ts). */
  entityVersion(entity: string): Promise<number | null>;
}

/** The sweeper's. */
export interface SweepingStore {
  /** Up to `limit` deliveries (and fanned-out deliveries' runs) nobody works on, their `updated_at` touched so the next sweep waits. */
  takeStranded(cutoffs: StrandedCutoffs, nowMs: number, limit: number): Promise<RunRef[]>;
  applyRetention(deleteBeforeMs: number, clearBodiesBeforeMs: number, limit: number): Promise<RetentionResult>;
  /** Carries the overview's counts forward and refreshes its snapshot when it is old (store/d1/overview.ts). */
  maintainOverview(nowMs: number): Promise<void>;
}

/** The admin API's and the dashboard's: reading deliveries, and replaying them. */
export interface AdminStore {
  /** Exact counts (a full count: not for polling). */
  stats(nowMs: number): Promise<DeliveryStats>;
  /** The overview's snapshot, cheap to poll. */
  overview(nowMs: number): Promise<Overview>;
  list(query: ListingQuery): Promise<ListingPage>;
  /** One id looked up in each of `sources`, newest first. */
  findById(sources: readonly string[], id: string): Promise<DeliverySummary[]>;
  get(ref: DeliveryRef): Promise<DeliveryDetail | null>;
  /** A delivery's, or with `subscriber` one run's. */
  replayState(ref: RunRef): Promise<ReplayState | null>;
  /**
   * A settled delivery (or, with `subscriber`, one run of a fanned-out one) back to `received`,
   * attempts 0, when its status is one of `from` and its body is kept; a fanned-out delivery's runs
   * in `from` with it. What to run again (the delivery, or its runs); null when refused.
   */
  resetForReplay(ref: RunRef, from: readonly ReplayFrom[], nowMs: number): Promise<RunRef[] | null>;
  /** The bulk form (up to `limit` failed deliveries, oldest first): what to run again. */
  resetFailedForReplay(filter: FailedFilter, limit: number, nowMs: number): Promise<RunRef[]>;
  countFailed(filter: FailedFilter): Promise<number>;
  /** Failed deliveries by source and subscriber (one subscriber's rows and fanned-out runs; by the failed indexes). */
  failedBySubscriber(): Promise<SubscriberCount[]>;
  /** When each source's previous secret last verified a delivery (ISO time), by source. */
  previousSecretUses(): Promise<Record<string, string>>;
  providerMessages(): Promise<ProviderMessageCount[]>;

  /** Alerting: its counters, incidents and outbox (store/alerts.ts). */
  readonly alerts: AlertStore;
}

/** Every operation: what `openStore` returns (index.ts). */
export interface Store extends ReceivingStore, ProcessingStore, SweepingStore, AdminStore {}

/**
 * A store for many operations of one invocation (a queue batch, a sweep): `close()` ends what it
 * holds open (on Postgres, the few connections its operations share), and must be reached when
 * the work is done, in `finally`. Nothing may use it after.
 */
export interface ClosableStore extends Store {
  close(): Promise<void>;
}
