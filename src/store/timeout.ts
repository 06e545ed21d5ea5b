/**
 * How long the inbox waits for its database: every store call is bounded (STORE_TIMEOUT_SECONDS),
 * on D1 by the wrapper d1/bounded.ts, on Postgres by the client's query timeout (postgres/client.ts).
 * A call past it is an infrastructure error: retried, counting nothing, and given up on only when
 * a delivery's own commit keeps failing so while the database answers (processing/consumer.ts).
 */

/** The default wait, in seconds: D1's own limit for one query is 30 s. */
export const DEFAULT_STORE_TIMEOUT_SECONDS = 30;

/** The database did not answer in time. The call may still land later; callers treat it as "maybe". */
export class StoreTimeoutError extends Error {
  override readonly name = "StoreTimeoutError";
}
