/**
 * A handler's run under its lease: the lease is renewed while the handler works, so a slow handler
 * keeps its delivery instead of losing it to a second worker, and a deadline ends a handler that
 * never returns (its attempt then counts as a retryable failure).
 */
import { describeError } from "./errors";
import type { DeliveryLease } from "./lease";

/** A handler ran past HANDLER_TIMEOUT_SECONDS: retried like any other failure. */
export class HandlerTimeoutError extends Error {
  override readonly name = "HandlerTimeoutError";
}

/** The part of a lease stub this needs. */
type Renewable = Pick<DurableObjectStub<DeliveryLease>, "renew">;

/**
 * Runs `work` while renewing the lease `token` every third of `leaseMs`, and rejects with
 * HandlerTimeoutError after `timeoutMs`. A handler that returns within a third of the lease
 * (the usual case) costs no renewal at all.
 * @example
 * const handled = await keepLease(() => runHandler(...), lease, token, { leaseMs: 60_000, timeoutMs: 300_000 });
 */
export async function keepLease<T>(work: () => Promise<T>, lease: Renewable, token: number, limits: { leaseMs: number; timeoutMs: number }): Promise<T> {
  let renewTimer: ReturnType<typeof setTimeout> | undefined;
  let deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  let running = true;
  const renewEveryMs = Math.max(1_000, Math.floor(limits.leaseMs / 3));
  const scheduleRenewal = () => {
    renewTimer = setTimeout(async () => {
      let keep = true;
      try {
        // False: another worker took over (our renewal came too late). The fenced commit refuses
        // our result then; nothing to renew any more.
        keep = await lease.renew(token);
      } catch (error) {
        // The lease object browned out: try again at the next tick, the lease has two more.
        console.error("could not renew a lease, will try again:", describeError(error));
      }
      if (keep && running) scheduleRenewal();
    }, renewEveryMs);
  };
  scheduleRenewal();
  const deadline = new Promise<never>((_, reject) => {
    deadlineTimer = setTimeout(() => reject(new HandlerTimeoutError(`the handler did not return within ${Math.round(limits.timeoutMs / 1000)} s`)), limits.timeoutMs);
  });
  try {
    return await Promise.race([work(), deadline]);
  } finally {
    running = false;
    clearTimeout(renewTimer);
    clearTimeout(deadlineTimer);
  }
}
