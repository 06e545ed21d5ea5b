/**
 * One delivery's attempt, between its claim and its commit: run the user's handler, and decide
 * what a failure means (the retry policy). The consumer (consumer.ts) batches the round trips
 * around this; everything here is about a single delivery.
 */
import type { InboxConfig } from "../config";
import { PermanentError, RetryAfterError, sql, type Effect, type HandlerContext, type HandlerResolver } from "../handler-api";
import { describeError, InfrastructureError } from "../handler-api/errors";
import { sha256 } from "../crypto";
import { toHex } from "../hex";
import type { DeliveryToRun, RunTiming, Store } from "../store";
import { parseEvent } from "./handlers";
import type { DeliveryLease } from "./lease";
import { leaseName, type DeadLetter, type DeliveryRef } from "./messages";
import { createOrderGuard, STALE_VERSION } from "./order-guard";

/** What became of one message; `reason` is for logs and tests. */
export type Outcome =
  | { readonly action: "ack"; readonly reason: "done" | "unhandled" | "failed" | "busy" | "settled" | "lease_lost" | "exhausted" | "malformed" }
  | { readonly action: "retry"; readonly reason: "handler_error" | "infrastructure" | "deferred"; readonly delaySeconds: number };

/** A claimed delivery whose handler ran: what to commit with its done mark. */
export interface HandledDelivery {
  readonly handled: boolean;
  readonly effects: readonly Effect[];
}

/**
 * Runs the handlers the resolver names for the delivery, in order, with one context, and collects
 * their effects. Throws what a handler throws, and stops there: the ones after it do not run.
 *
 * The Worker's resolver puts the source's code handler first and its configured forward last
 * (forwarding/resolver.ts): the handler's effects are committed with the done mark only once the
 * backend took the delivery, so a delivery the backend refused commits none. Not the reverse: a
 * commit that fails after the backend's 2xx retries both, and the backend deduplicates the resend on
 * its `webhook-id`. Once `signal` is aborted (the deadline, or the lease lost) no further handler
 * starts: nothing more leaves the inbox.
 *
 * A store call made for the handler that failed (the order guard's read) makes the run an
 * infrastructure failure, whatever the handler then throws: `InfrastructureError`, not counted.
 */
export async function runHandler(
  env: Env,
  store: Store,
  resolve: HandlerResolver,
  ref: DeliveryRef,
  delivery: DeliveryToRun,
  attempt: number,
  signal: AbortSignal,
): Promise<HandledDelivery> {
  const handlers = resolve(ref.source, delivery.eventType, env);
  if (handlers.length === 0) return { handled: false, effects: [] };
  const effects: Effect[] = [];
  // The first store call made for the handler that failed, if any (see above).
  let storeFailure: unknown = null;
  const guardedStore = {
    entityVersion: (entity: string) =>
      store.entityVersion(entity).catch((error: unknown) => {
        storeFailure ??= error;
        throw error;
      }),
  };
  const ctx: HandlerContext = {
    deliveryId: ref.id,
    source: ref.source,
    eventType: delivery.eventType,
    attempt,
    env,
    idempotencyKey: await idempotencyKey(ref),
    rawBody: delivery.body,
    contentType: delivery.contentType,
    signal,
    sql,
    effect: (...statements) => void effects.push(...statements),
    order: createOrderGuard(guardedStore, ref, (statement) => void effects.push(statement)),
  };
  const event = parseEvent(delivery.body);
  for (const [index, handler] of handlers.entries()) {
    // Given up on (its deadline) or its lease lost while an earlier one ran: nothing more starts.
    if (index > 0) signal.throwIfAborted();
    try {
      const returned = await handler(event, ctx);
      if (returned) effects.push(...returned);
    } catch (error) {
      if (storeFailure !== null && !(error instanceof InfrastructureError)) {
        throw new InfrastructureError(`a store call made for the handler failed: ${describeError(storeFailure)}`, { cause: storeFailure });
      }
      throw error;
    }
  }
  return { handled: true, effects };
}

/**
 * A `RetryAfterError`'s wait is honoured up to this. A destination that asks for longer is down,
 * which the backoff and MAX_ATTEMPTS handle; the sweeper leaves a retry alone this long (sweeper.ts).
 */
export const MAX_RETRY_AFTER_SECONDS = 300;

/**
 * The wait before the retry of an attempt that threw `error`: the backoff, or a `RetryAfterError`'s
 * wait (capped at MAX_RETRY_AFTER_SECONDS) when that is longer.
 * @example
 * retryDelaySeconds(new RetryAfterError("503", 30), 2); // 30
 * retryDelaySeconds(new Error("boom"), 2); // 2
 */
export function retryDelaySeconds(error: unknown, backoffSeconds: number): number {
  if (!(error instanceof RetryAfterError) || error.retryAfterSeconds === null) return backoffSeconds;
  return Math.max(backoffSeconds, Math.min(error.retryAfterSeconds, MAX_RETRY_AFTER_SECONDS));
}

/**
 * The retry policy for an attempt that threw: `PermanentError` or the last attempt → failed and
 * dead-lettered; anything else → back to `received` and retried after
 * RETRY_BASE_SECONDS · 2^(attempt−1), or a `RetryAfterError`'s longer wait. Every write is fenced
 * by the lease token.
 */
export async function handleFailure(
  error: unknown,
  env: Env,
  store: Store,
  config: InboxConfig,
  ref: DeliveryRef,
  lease: DurableObjectStub<DeliveryLease>,
  token: number,
  attempt: number,
  run?: RunTiming,
): Promise<Outcome> {
  const message =
    error instanceof Error && error.message.includes(STALE_VERSION)
      ? "a newer event for the same entity was applied meanwhile; retrying to re-check the order guard"
      : describeError(error);
  if (error instanceof PermanentError || attempt >= config.maxAttempts) {
    const reason = error instanceof PermanentError ? message : `${message} (gave up after ${attempt} attempts)`;
    const failed = await failDelivery(env, store, ref, token, reason, run);
    if (failed === "lease_lost") return { action: "ack", reason: "lease_lost" };
    if (failed === "failed") await lease.settle(token);
    return { action: "ack", reason: "failed" };
  }
  const delaySeconds = retryDelaySeconds(error, config.retryBaseSeconds * 2 ** (attempt - 1));
  if (!(await store.markRetrying(ref, token, message, Date.now(), run))) return { action: "ack", reason: "lease_lost" };
  await lease.release(token, Date.now() + delaySeconds * 1000);
  return { action: "retry", reason: "handler_error", delaySeconds };
}

/**
 * Records a delivery as failed (fenced by `token`), then dead-letters it. `lease_lost` when the
 * fence refused; `alert_pending` when the dead letter could not be sent: the caller must then leave
 * the lease unsettled, so that its alarm brings the delivery back and the next claim finds it failed
 * and sends the dead letter again (store/d1/lifecycle.ts `markTakeover`). The same happens when the
 * worker dies between the two. Only `failed` (both done) may settle the lease.
 */
export async function failDelivery(
  env: Env,
  store: Store,
  ref: DeliveryRef,
  token: number,
  error: string,
  run?: RunTiming,
): Promise<"failed" | "alert_pending" | "lease_lost"> {
  if (!(await store.markFailed(ref, token, error, Date.now(), run))) return "lease_lost";
  return (await sendDeadLetter(env, ref, error)) ? "failed" : "alert_pending";
}

/**
 * Puts a failed delivery on the dead-letter queue, for alerting. False when the send failed (it is
 * logged): the caller leaves the lease unsettled, and the dead letter is sent again (`failDelivery`).
 */
export async function sendDeadLetter(env: Env, ref: DeliveryRef, error: string): Promise<boolean> {
  const deadLetter: DeadLetter = { source: ref.source, id: ref.id, error };
  try {
    await env.DEAD_LETTERS.send(deadLetter, { contentType: "json" });
    return true;
  } catch (sendError) {
    console.error(`dead-letter send failed for ${ref.source}/${ref.id} (it is failed in the store; sent again after its lease):`, describeError(sendError));
    return false;
  }
}

/** A stable key for downstream APIs: the same for every attempt and replay of a delivery. */
export async function idempotencyKey(ref: DeliveryRef): Promise<string> {
  return `whi_${toHex(await sha256(new TextEncoder().encode(leaseName(ref))))}`;
}
