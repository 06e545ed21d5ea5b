/**
 * Forwarding a delivery to an HTTP backend: take a slot of the destination's concurrency limit,
 * send the signed request (request.ts), judge the answer (response.ts), give the slot back. The
 * outcome is told the way every handler tells it, by what it throws (handler-api/errors.ts):
 *
 * - nothing: the backend took the delivery (2xx); the delivery is done;
 * - `RetryAfterError`: 408, 429, 5xx, a timeout or a network error: retried with the inbox's
 *   backoff, or the destination's `Retry-After` when longer, until MAX_ATTEMPTS;
 * - `PermanentError`: any other 4xx, or a redirect: failed at once, the status in its error;
 * - `DeferredError`: no slot free, the destination's circuit breaker open or probing, an older
 *   delivery waiting its turn (breaker.ts, arrival.ts), or the limiter unreachable: back on the
 *   queue for a while, no attempt used up.
 *
 * Used for `<SOURCE>_FORWARD_URL` (attempt.ts, after the source's code handler if it has one) and
 * by `forward({ url, secret })`, a handler like any other for the registry.
 */
import { loadConfig } from "../config";
import { DeferredError, PermanentError, RetryAfterError, type Handler, type HandlerContext } from "../handler-api";
import { describeError } from "../handler-api/errors";
import {
  checkForwardSecret,
  checkForwardUrl,
  DEFAULT_BREAKER,
  DEFAULT_CONCURRENCY,
  DEFAULT_TIMEOUT_SECONDS,
  MAX_CONCURRENCY,
  timeoutProblem,
  type ForwardDestination,
} from "../config/destination";
import { MAX_HANDLER_TIMEOUT_SECONDS, wholeNumberProblem } from "../config/limits";
import { receivedAtMs } from "./arrival";
import type { BreakerOutcome } from "./breaker";
import { limiterFor, type WaitReason } from "./limiter";
import { forwardRequest, type ForwardedDelivery } from "./request";
import { judgeResponse } from "./response";

/** A slot outlives its request's timeout by this much, so it is never dropped under a request still running. */
export const SLOT_MARGIN_SECONDS = 15;
/** The wait when the limiter itself could not be reached. */
export const LIMITER_UNAVAILABLE_WAIT_SECONDS = 10;
/** The wait of a delivery whose `forward()` options are not usable yet (a var not set): like a bad var's. */
export const MISCONFIGURED_WAIT_SECONDS = 300;

/**
 * The delivery of a handler's context, as forwarding sends it. Everything comes from the claim
 * (its content type read by the claim's own statement, store/d1/lifecycle.ts): no D1 query here,
 * whose failure would count as a failed attempt.
 */
export function forwardedDelivery(ctx: HandlerContext): ForwardedDelivery & { readonly receivedAt: string } {
  return {
    receivedAt: ctx.receivedAt,
    source: ctx.source,
    deliveryId: ctx.deliveryId,
    eventType: ctx.eventType,
    contentType: ctx.contentType,
    body: ctx.rawBody,
    idempotencyKey: ctx.idempotencyKey,
    attempt: ctx.attempt,
  };
}

/** How long a failed request's outcome waits for the limiter to take it (see `forwardDelivery`). */
export const SETTLE_WAIT_MS = 5_000;

/**
 * Sends `delivery` to `destination` once. Returns when the backend took it (2xx); throws what
 * the outcome means otherwise (see the top of this file). `signal` is the handler's deadline: when
 * it aborts, its reason is thrown as it is.
 */
export async function forwardDelivery(env: Env, destination: ForwardDestination, delivery: ForwardedDelivery & { readonly receivedAt?: string }, signal: AbortSignal): Promise<void> {
  const limiter = limiterFor(env, destination.url);
  const slotId = crypto.randomUUID();
  // Waiter: the delivery at this destination (two destinations of one origin share the object).
  const waiter = `${delivery.idempotencyKey} ${destination.url}`;
  const receivedAt = receivedAtMs(delivery.receivedAt);
  let answer;
  try {
    const holdMs = (destination.timeoutSeconds + SLOT_MARGIN_SECONDS) * 1000;
    answer = await limiter.acquire(slotId, destination.concurrency, holdMs, waiter, { destination: destination.url, breaker: destination.breaker, receivedAtMs: receivedAt });
  } catch (error) {
    console.error("forwarding: the concurrency limiter could not be reached, the delivery waits:", describeError(error));
    throw new DeferredError("the forward destination's concurrency limiter could not be reached", LIMITER_UNAVAILABLE_WAIT_SECONDS);
  }
  if (!answer.granted) throw new DeferredError(WAIT_MESSAGES[answer.reason ?? "full"](destination), answer.waitSeconds);

  // Once the request is on its way, the destination may be working on it whatever ends our wait
  // (its timeout, the handler's deadline or the batch's time limit aborting it, a connection lost
  // midway): its slot is then kept until it expires, so that the limit still counts it and the
  // destination never has more than the limit in flight. It is given back when the answer is in,
  // or when nothing was sent. The breaker is told every outcome the destination is to blame for.
  let sent = false;
  let result;
  let outcome: BreakerOutcome = "not-counted";
  try {
    const timeout = AbortSignal.timeout(destination.timeoutSeconds * 1000);
    const stop = AbortSignal.any([signal, timeout]);
    const request = await forwardRequest(destination, delivery, Math.floor(Date.now() / 1000), stop);
    try {
      stop.throwIfAborted();
      sent = true;
      result = await judgeResponse(await fetch(request), destination.url, Date.now());
      outcome = result.kind === "delivered" ? "success" : result.kind === "retry" ? "failure" : "not-counted";
    } catch (error) {
      // The handler's deadline is ours, not the destination's: not counted.
      if (signal.aborted) throw signal.reason;
      outcome = "failure";
      if (timeout.aborted) throw new RetryAfterError(`the forward destination did not answer within ${destination.timeoutSeconds} s`, null);
      const text = describeError(error);
      throw new RetryAfterError(`the forward destination could not be reached: ${text.length > 200 ? `${text.slice(0, 200)}…` : text}`, null);
    }
  } finally {
    const keepSlot = sent && result === undefined;
    // When a failure is retried: the consumer's backoff after this attempt, or the destination's Retry-After.
    const backoffSeconds = destination.retryBaseSeconds * 2 ** Math.min(20, Math.max(0, delivery.attempt - 1));
    const retryInSeconds = Math.max(backoffSeconds, result?.kind === "retry" ? (result.retryAfterSeconds ?? 0) : 0);
    const settled = limiter.settle(slotId, destination.url, outcome, destination.breaker, keepSlot, { waiter, receivedAtMs: receivedAt, retryInSeconds }).catch((error: unknown) => {
      console.error("forwarding: could not tell the limiter how a request ended; its slot expires by itself:", describeError(error));
    });
    // A 2xx is the delivery's result whatever the limiter does: not waited for, so that a limiter
    // that hangs cannot hold the handler past its deadline, which would send the delivery again.
    // Any other outcome waits SETTLE_WAIT_MS at most, so that a 4xx stays a 4xx. (A settle cut off
    // with the invocation is lost; the slot, and a probe's turn, expire by themselves.)
    if (result?.kind !== "delivered") await atMost(settled, SETTLE_WAIT_MS);
  }
  if (result.kind === "retry") throw new RetryAfterError(result.reason, result.retryAfterSeconds);
  if (result.kind === "rejected") throw new PermanentError(result.reason);
}

/** What a delivery refused a turn is told, by why. */
const WAIT_MESSAGES: Record<WaitReason, (destination: ForwardDestination) => string> = {
  full: (destination) => `the forward destination has ${destination.concurrency} requests in flight already`,
  open: () => "the forward destination's circuit breaker is open (it kept failing); the delivery waits for the next probe",
  probing: () => "the forward destination's circuit breaker is half-open and a probe is in flight; the delivery waits for its answer",
  order: () => "an older delivery to the forward destination goes first",
};

/** The options of `forward()`. A value may be given as a function of the env, to read it from a var or secret. */
export interface ForwardOptions {
  /** The destination: https://, or http:// for localhost. */
  readonly url: string | ((env: Env) => unknown);
  /** The Standard Webhooks signing secret, `whsec_…`. Keep it out of the code: `(env) => env.BILLING_FORWARD_SECRET`. */
  readonly secret: string | ((env: Env) => unknown);
  /** Default 30; at most half of LEASE_SECONDS and under HANDLER_TIMEOUT_SECONDS. */
  readonly timeoutSeconds?: number;
  /** Requests in flight at once to the destination's origin; default 10. */
  readonly concurrency?: number;
}

/** The destination of `options` under `env`, or what is wrong with it (words, never a value). */
function resolveDestination(options: ForwardOptions, env: Env): ForwardDestination | string {
  const read = (value: string | ((env: Env) => unknown)) => (typeof value === "function" ? value(env) : value);
  const urlValue = read(options.url);
  const secretValue = read(options.secret);
  if (typeof urlValue !== "string" || urlValue.trim() === "") return "the url option gives no URL (is its var set?)";
  if (typeof secretValue !== "string" || secretValue.trim() === "") return "the secret option gives no secret (is it set?)";
  const url = checkForwardUrl(urlValue);
  if (!url.ok) return `the url option ${url.problem}`;
  const secret = checkForwardSecret(secretValue);
  if (!secret.ok) return `the secret option ${secret.problem}`;
  const timeoutSeconds = options.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;
  const config = loadConfig(env);
  const timeout = timeoutProblem(timeoutSeconds, { leaseSeconds: config.leaseSeconds, handlerTimeoutSeconds: config.handlerTimeoutSeconds });
  if (timeout) return `the timeoutSeconds option: ${timeout}`;
  return {
    url: url.url,
    key: secret.key,
    timeoutSeconds,
    concurrency: options.concurrency ?? DEFAULT_CONCURRENCY,
    maxAttempts: config.maxAttempts,
    retryBaseSeconds: config.retryBaseSeconds,
    breaker: DEFAULT_BREAKER,
    filterJson: null,
  };
}

/**
 * A handler that forwards each delivery it is given, as `<SOURCE>_FORWARD_URL` does for a whole
 * source: for routing by event type. Literal options are checked at once (a mistake throws when
 * the registry is built); values read from the env are checked at the first delivery, and while
 * they are unusable the deliveries wait (DeferredError, logged), failing none.
 * @example
 * export const HANDLERS = defineHandlers({
 *   stripe: {
 *     "invoice.paid": forward({ url: "https://billing.example.com/webhooks", secret: (env) => env.BILLING_FORWARD_SECRET }),
 *     "payment_intent.succeeded": recordPayment,
 *   },
 * });
 */
export function forward(options: ForwardOptions): Handler {
  if (typeof options.url === "string") {
    const url = checkForwardUrl(options.url);
    if (!url.ok) throw new TypeError(`forward(): url ${url.problem}`);
  }
  if (typeof options.secret === "string") {
    const secret = checkForwardSecret(options.secret);
    if (!secret.ok) throw new TypeError(`forward(): secret ${secret.problem}`);
  }
  const timeout = wholeNumberProblem(options.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS, 1, MAX_HANDLER_TIMEOUT_SECONDS);
  if (timeout) throw new TypeError(`forward(): timeoutSeconds ${timeout}`);
  const concurrency = wholeNumberProblem(options.concurrency ?? DEFAULT_CONCURRENCY, 1, MAX_CONCURRENCY);
  if (concurrency) throw new TypeError(`forward(): concurrency ${concurrency}`);

  const destinations = new WeakMap<object, ForwardDestination | string>();
  return async (_event, ctx) => {
    let destination = destinations.get(ctx.env);
    if (destination === undefined) destinations.set(ctx.env, (destination = resolveDestination(options, ctx.env)));
    if (typeof destination === "string") {
      console.error(`forward() for ${ctx.source}/${ctx.eventType ?? "*"}: ${destination}; its deliveries wait`);
      throw new DeferredError(`forward(): ${destination}`, MISCONFIGURED_WAIT_SECONDS);
    }
    await forwardDelivery(ctx.env, destination, forwardedDelivery(ctx), ctx.signal);
  };
}

/** Waits for `promise`, or `ms`, whichever comes first. */
async function atMost(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
