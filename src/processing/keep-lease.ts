/**
 * A delivery's work under its lease: the lease is renewed from the claim until the result is
 * recorded, so slow work (a slow handler, or D1 slow to take a mark or a commit) keeps its
 * delivery instead of losing it to a second worker; and a deadline ends a handler that never
 * returns (its attempt then counts as a retryable failure). A lease that is lost, or that could not
 * be renewed, stops the work at once (`LeaseLostError`, `LeaseLapsedError`).
 */
import { describeError } from "../handler-api/errors";
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
 * The lease was taken over: another worker holds the delivery now (our renewal came too late, or
 * a renewal answered that the token is no longer the lease's). Whatever this worker still does for
 * the delivery is stopped: nothing more leaves the inbox for it, and the fence refuses its writes.
 */
export class LeaseLostError extends Error {
  override readonly name = "LeaseLostError";
}

/**
 * The lease could not be renewed (its object browned out) for so long that it is about to run out:
 * the work is stopped before another worker may take over, and recorded as not counted, so that
 * the takeover does not charge the delivery for a run that did not crash (an infrastructure
 * failure never uses up an attempt).
 */
export class LeaseLapsedError extends Error {
  override readonly name = "LeaseLapsedError";
}

/** A lease being held: aborted (with a LeaseLostError or LeaseLapsedError) once it is not ours any more. */
export interface HeldLease {
  readonly signal: AbortSignal;
  /** Stops renewing; call it once the delivery's result is recorded. */
  stop(): void;
}

/** How often a failed renewal is tried again: in twelfths of the lease. */
const RETRY_FRACTION = 12;
/** Work stops when less than this share of the lease is left unconfirmed. */
const LAPSE_MARGIN_FRACTION = 6;

/**
 * Renews the lease `token` every third of `leaseMs` until `stop()` is called. Work that is done
 * within a third of the lease (the usual case) costs no renewal at all. `grantedAtMs` is when the
 * claim was asked for: the lease runs at least `leaseMs` from then.
 *
 * The returned signal aborts when a renewal answers that another worker took over
 * (`LeaseLostError`), or when renewals kept failing, or one hangs, until less than a sixth of the
 * lease is certainly left (`LeaseLapsedError`; a failed renewal is tried again every twelfth of the lease).
 * @example
 * const held = holdLease(lease, token, 60_000, claimedAtMs);
 * try { await work(held.signal); } finally { held.stop(); }
 */
export function holdLease(lease: Renewable, token: number, leaseMs: number, grantedAtMs = Date.now()): HeldLease {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let holding = true;
  // The lease certainly runs until then: each renewal extends it by `leaseMs` from when it was asked.
  let certainUntilMs = grantedAtMs + leaseMs;
  // Past this, too little of the lease is certainly left to go on working.
  const lapseAtMs = () => certainUntilMs - leaseMs / LAPSE_MARGIN_FRACTION;
  const schedule = (delayMs: number) => {
    timer = setTimeout(async () => {
      const askedAtMs = Date.now();
      let renewed: boolean | null = null;
      try {
        // A renewal that hangs is one that failed, once the lease is about to run out: waiting on it
        // longer would keep the work going past a takeover.
        const hung = () => new Error("the renewal did not answer before the lease was about to run out");
        renewed = await withDeadline(() => lease.renew(token), Math.max(0, lapseAtMs() - askedAtMs), hung);
      } catch (error) {
        console.error("could not renew a lease, will try again:", describeError(error));
      }
      if (!holding) return;
      if (renewed === false) {
        controller.abort(new LeaseLostError("the lease was taken over by another worker"));
        return;
      }
      if (renewed === true) {
        certainUntilMs = askedAtMs + leaseMs;
        schedule(leaseMs / 3);
        return;
      }
      const retryMs = leaseMs / RETRY_FRACTION;
      if (Date.now() + retryMs > lapseAtMs()) {
        controller.abort(new LeaseLapsedError("the lease could not be renewed and was about to run out"));
        return;
      }
      schedule(retryMs);
    }, delayMs);
  };
  schedule(leaseMs / 3);
  return {
    signal: controller.signal,
    stop() {
      holding = false;
      clearTimeout(timer);
    },
  };
}

/**
 * Runs `work` with a deadline: rejects with `timedOut()` (by default a HandlerTimeoutError) after
 * `timeoutMs`, and aborts the signal it hands to `work` then, so that a handler passing it on (to
 * `fetch`) stops its calls.
 * `stopped` (the held lease's signal) ends it the same way, with that signal's reason.
 * A handler that ignores the signal keeps running in the background, but its effects are never
 * committed.
 */
export async function withDeadline<T>(
  work: (signal: AbortSignal) => Promise<T>,
  timeoutMs: number,
  timedOut: () => Error = () => new HandlerTimeoutError(`the handler did not return within ${Math.round(timeoutMs / 1000)} s`),
  stopped?: AbortSignal,
): Promise<T> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onStopped: (() => void) | undefined;
  const deadline = new Promise<never>((_, reject) => {
    const end = (error: unknown) => {
      controller.abort(error);
      reject(error);
    };
    timer = setTimeout(() => end(timedOut()), timeoutMs);
    if (stopped) {
      onStopped = () => end(stopped.reason);
      if (stopped.aborted) onStopped();
      else stopped.addEventListener("abort", onStopped, { once: true });
    }
  });
  try {
    return await Promise.race([work(controller.signal), deadline]);
  } finally {
    clearTimeout(timer);
    if (onStopped) stopped?.removeEventListener("abort", onStopped);
  }
}
