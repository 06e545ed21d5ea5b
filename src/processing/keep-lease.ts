/**
 * A delivery's work under its lease: the lease is renewed from the claim until the result is
 * recorded, so slow work (a slow handler, or D1 slow to take a mark or a commit) keeps its
 * delivery instead of losing it to a second worker; and a deadline ends a handler that never
 * returns (its attempt then counts as a retryable failure).
 */
import { describeError } from "./errors";
import type { DeliveryLease } from "./lease";

/** A handler ran past HANDLER_TIMEOUT_SECONDS: retried like any other failure. */
export class HandlerTimeoutError extends Error {
  override readonly name = "HandlerTimeoutError";
}

/**
 * A handler was cut short because its queue batch's time ran out (the consumer's 15-minute
 * limit), not its own HANDLER_TIMEOUT_SECONDS: its attempt is not counted.
 */
export class BatchTimeUpError extends Error {
  override readonly name = "BatchTimeUpError";
}

/** The part of a lease stub this needs. */
type Renewable = Pick<DurableObjectStub<DeliveryLease>, "renew">;

/**
 * Renews the lease `token` every third of `leaseMs` until the returned function is called. Work
 * that is done within a third of the lease (the usual case) costs no renewal at all.
 * @example
 * const stop = holdLease(lease, token, 60_000);
 * try { await work(); } finally { stop(); }
 */
export function holdLease(lease: Renewable, token: number, leaseMs: number): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let holding = true;
  const schedule = () => {
    timer = setTimeout(async () => {
      let keep = true;
      try {
        // False: another worker took over (our renewal came too late). The fenced commit refuses
        // our result then; nothing to renew any more.
        keep = await lease.renew(token);
      } catch (error) {
        // The lease object browned out: try again at the next tick, the lease has two more.
        console.error("could not renew a lease, will try again:", describeError(error));
      }
      if (keep && holding) schedule();
    }, leaseMs / 3);
  };
  schedule();
  return () => {
    holding = false;
    clearTimeout(timer);
  };
}

/**
 * Runs `work` with a deadline: rejects with `timedOut()` (by default a HandlerTimeoutError) after
 * `timeoutMs`, and aborts the signal it hands to `work` then, so that a handler passing it on (to
 * `fetch`) stops its calls.
 * A handler that ignores the signal keeps running in the background, but its effects are never
 * committed.
 */
export async function withDeadline<T>(
  work: (signal: AbortSignal) => Promise<T>,
  timeoutMs: number,
  timedOut: () => Error = () => new HandlerTimeoutError(`the handler did not return within ${Math.round(timeoutMs / 1000)} s`),
): Promise<T> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = timedOut();
      controller.abort(error);
      reject(error);
    }, timeoutMs);
  });
  try {
    return await Promise.race([work(controller.signal), deadline]);
  } finally {
    clearTimeout(timer);
  }
}
