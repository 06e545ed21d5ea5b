/**
 * What a listing of deliveries asks and answers: its filter, its keyset cursor, its page, and the
 * window a filtered page examines at most. Shared by the D1 store (d1/listing.ts) and the Postgres store
 * (postgres/listing.ts), and by the admin API and the dashboard through index.ts.
 */
import type { DeliveryStatus, DeliverySummary } from "./deliveries";

/** The position after the last row of a page: the listing's sort key. */
export interface ListingKey {
  readonly receivedAt: string;
  readonly source: string;
  readonly id: string;
}

/** Which deliveries a listing or a bulk replay takes; every field optional. */
export interface DeliveryFilter {
  readonly status?: DeliveryStatus | undefined;
  readonly source?: string | undefined;
  readonly eventType?: string | undefined;
  /** Received at or after this ISO time. */
  readonly since?: string | undefined;
  /** Received before this ISO time. */
  readonly until?: string | undefined;
  /** Only done deliveries no handler matched. */
  readonly unhandled?: boolean | undefined;
  /**
   * Only the deliveries this subscriber took: the ones it alone took, and its runs of fanned-out
   * ones; with a status, that subscriber's run must have it too.
   */
  readonly subscriber?: string | undefined;
}

export interface ListingQuery extends DeliveryFilter {
  readonly limit: number;
  readonly after?: ListingKey | undefined;
}

export interface ListingPage {
  readonly deliveries: DeliverySummary[];
  /** Where the next page starts when more rows may follow; null on the last page. */
  readonly nextKey: ListingKey | null;
  /**
   * Set when the page stopped at its window (LISTING_WINDOW) before it filled: the `received_at`
   * it searched back to. The next page goes on from there.
   */
  readonly searchedThrough: string | null;
}

/**
 * How many index entries one page of a filtered listing examines at most. A filter no index
 * serves (a source, an event type, `done`) is checked row by row along the index, and D1 runs one
 * query at a time: a filter that matches nothing must not walk a million rows while providers
 * wait (the same bound holds on Postgres). A page cut short here ends with a cursor at the last entry examined, so the next page goes
 * on from there (`ListingPage.searchedThrough`).
 */
export const LISTING_WINDOW = 10_000;
