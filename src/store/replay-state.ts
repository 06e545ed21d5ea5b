/**
 * What a replay asks and finds: the filter of a bulk replay, and what decides whether one delivery
 * can be replayed. Shared by the D1 store (d1/replay.ts) and the Postgres store (postgres/replay.ts),
 * and by replay (processing/replay.ts) through index.ts.
 */
import type { DeliveryStatus } from "./deliveries";
import type { DeliveryFilter } from "./listing-query";

/** What decides whether a delivery can be replayed, when the replay reset refused it. */
export interface ReplayState {
  readonly status: DeliveryStatus;
  /** Retention cleared the body: a replay would hand its handler no bytes. */
  readonly bodyPruned: boolean;
}

/** Which failed deliveries a bulk replay takes: the listing's filters but the status. */
export type FailedFilter = Omit<DeliveryFilter, "status" | "unhandled">;
