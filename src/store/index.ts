/**
 * The store's door: `openStore` picks the implementation from the bindings, so that nothing
 * outside src/store knows which database runs (store.ts says what both promise).
 */
import { checkConfig, ConfigError } from "../config";
import { d1Store } from "./d1";
import { boundedD1 } from "./d1/bounded";
import { postgresStore } from "./postgres";
import { clientPerOperation, sharedClients } from "./postgres/client";
import type { ClosableStore, Store } from "./store";
import { DEFAULT_STORE_TIMEOUT_SECONDS } from "./timeout";

export type { AdminStore, ClosableStore, CommitResult, Effect, ProcessingStore, ReceivingStore, Store, SweepingStore, Takeover, WaitUntil } from "./store";
export { CUT_SHORT, type RunResult } from "./run-result";

// The store's vocabulary, for the callers (the admin API, the dashboard, the consumer, the sweeper):
// the same in both stores, from neutral modules that import neither.
export type { AttemptEntry, AttemptOutcome, RunTiming } from "./attempts";
export type { DeliveryToRun } from "./claims";
export { DELIVERY_STATUSES, type DeliveryDetail, type DeliveryStatus, type DeliverySummary, type StatusCounts, type SubscriberCount } from "./deliveries";
export { LISTING_WINDOW, type DeliveryFilter, type ListingKey } from "./listing-query";
export type { FailedFilter } from "./replay-state";
export { filteredReason } from "./filtered";
export type { ProviderMessage, ProviderMessageCount } from "./provider-messages";
export type { RetentionResult } from "./sweeping";
export type { AlertCounts, AlertReadings, AlertStore, IncidentChanges, IncidentRecord, MessageOutcome, MessageStatus, NewMessage, OutboxMessage } from "./alerts";
export type { FailureGroup } from "./alert-types";
export { StoreTimeoutError } from "./timeout";

/**
 * The connections one batch store may hold at once on Postgres: one per delivery the consumer runs
 * at a time (processing/consumer.ts BATCH_CONCURRENCY), so none waits for another's.
 */
export const BATCH_CONNECTIONS = 8;

/**
 * The store for one request, queue batch or sweep: open it where the work starts and pass it
 * down; never keep one across requests. Postgres when the Worker has a Hyperdrive binding
 * (`wrangler … --env postgres`), else D1.
 * @example
 * const outcome = await openStore(c.env).record(delivery, c.executionCtx);
 */
export function openStore(env: Env): Store {
  const timeoutMs = storeTimeoutMs(env);
  return env.HYPERDRIVE ? postgresStore(env.HYPERDRIVE, clientPerOperation(env.HYPERDRIVE, timeoutMs)) : d1Store(boundedD1(env.DB, timeoutMs));
}

/** STORE_TIMEOUT_SECONDS in ms; its default while the configuration is invalid (the callers refuse to work then anyway). */
function storeTimeoutMs(env: Env): number {
  const config = checkConfig(env);
  return (config instanceof ConfigError ? DEFAULT_STORE_TIMEOUT_SECONDS : config.storeTimeoutSeconds) * 1000;
}

/**
 * The store for the many operations of one queue batch or sweep, which must `close()` it when done
 * (in `finally`). On Postgres its operations share up to BATCH_CONNECTIONS connections, opened as
 * needed and held until then, instead of one each (a claim, a commit, a check…); with D1 it is the
 * same as `openStore`, and `close()` does nothing.
 * @example
 * const store = openBatchStore(env);
 * try { await store.claim(ref, token, null, Date.now()); } finally { await store.close(); }
 */
export function openBatchStore(env: Env): ClosableStore {
  const timeoutMs = storeTimeoutMs(env);
  if (env.HYPERDRIVE) return postgresStore(env.HYPERDRIVE, sharedClients(env.HYPERDRIVE, BATCH_CONNECTIONS, timeoutMs));
  return { ...d1Store(boundedD1(env.DB, timeoutMs)), close: async () => undefined };
}
