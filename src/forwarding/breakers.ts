/**
 * The circuit breakers of every configured forward destination (`<SOURCE>_FORWARD_…_URL`), as the
 * dashboard's overview and `/admin/metrics` show them: one call to each destination's limiter
 * object per page view or scrape, all at once, and no store query. A `forward()` handler's
 * destination is not listed (its URL is known only when it runs).
 */
import { loadConfig } from "../config";
import { describeError } from "../handler-api/errors";
import type { BreakerStatus } from "./breaker";
import { limiterFor } from "./limiter";

/** One destination's breaker, as shown. `unknown`: its object could not be asked. */
export interface DestinationBreaker {
  /** The source's var prefix (`STRIPE`), as the vars name it. */
  readonly prefix: string;
  /** The subscriber name: `forward`, or `<name>`. */
  readonly name: string;
  /** The origin it sends to (the path and query are left out: a query may carry a token). */
  readonly origin: string;
  readonly status: BreakerStatus | "unknown";
  /** Since when it is in `status` (ms), or null when not known (closed since its object was made). */
  readonly sinceMs: number | null;
  /** Failures in a row that count towards opening it. */
  readonly failures: number;
  /** Open: when the next probe may go (ms). */
  readonly reopenAtMs: number | null;
  /** Deliveries registered as waiting their turn. */
  readonly waiting: number;
}

/** Every configured destination's breaker, by source prefix then as destinationsOf orders them. */
export async function readBreakers(env: Env): Promise<DestinationBreaker[]> {
  const byPrefix = loadConfig(env).forwarding.byPrefix;
  const destinations = Object.keys(byPrefix)
    .sort()
    .flatMap((prefix) => byPrefix[prefix]!.map((destination) => ({ prefix, destination })));
  return Promise.all(
    destinations.map(async ({ prefix, destination }): Promise<DestinationBreaker> => {
      const shown = { prefix, name: destination.name, origin: new URL(destination.url).origin };
      try {
        const view = await limiterFor(env, destination.url).breakerView(destination.url);
        return { ...shown, status: view.status, sinceMs: view.sinceMs === 0 ? null : view.sinceMs, failures: view.failures, reopenAtMs: view.reopenAtMs, waiting: view.waiting };
      } catch (error) {
        console.error(`forwarding: could not read the breaker of ${prefix}/${destination.name}:`, describeError(error));
        return { ...shown, status: "unknown", sinceMs: null, failures: 0, reopenAtMs: null, waiting: 0 };
      }
    }),
  );
}
