/**
 * One delivery's attempt, between its claim and its commit: run the user's handler, and decide
 * what a failure means (the retry policy). The consumer (consumer.ts) batches the round trips
 * around this; everything here is about a single delivery.
 */
import { PermanentError, RetryAfterError, sql, type Effect, type Handler, type HandlerContext, type RetrySchedule } from "../handler-api";
import { describeError, InfrastructureError } from "../handler-api/errors";
import { sha256 } from "../crypto";
import { toHex } from "../hex";
import type { DeliveryToRun, ProcessingStore, RunTiming } from "../store";
import { parseEvent } from "./handlers";
import type { DeliveryLease } from "./lease";
import { describeRun, leaseName, runMessage, type DeadLetter, type RunRef } from "./messages";
import { createOrderGuard, STALE_VERSION } from "./order-guard";

/** What became of one message; `reason` is for logs and tests. */
export type Outcome =
  | { readonly action: "ack"; readonly reason: "done" | "unhandled" | "failed" | "busy" | "settled" | "lease_lost" | "exhausted" | "malformed" | "fanned" }
  | { readonly action: "retry"; readonly reason: "handler_error" | "infrastructure" | "deferred"; readonly delaySeconds: number };

/** A claimed delivery whose handler ran: what to commit with its done mark. */
export interface HandledDelivery {
  readonly handled: boolean;
  readonly effects: readonly Effect[];
}

/**
 * Runs one subscriber's handlers for the delivery (or the run), in order, with one context, and
 * collects their effects. Throws what a handler throws, and stops there: the ones after it do not
 * run. Once `signal` is aborted (the deadline, or the lease lost) no further handler starts: nothing
 * more leaves the inbox. Another subscriber's handlers never run here: each has its own run.
 *
 * A store call made for the handler that failed (the order guard's read) makes the run an
 * infrastructure failure, whatever the handler then throws: `InfrastructureError`, not counted.
 */
export async function runHandler(
  env: Env,
  store: ProcessingStore,
  handlers: readonly Handler[],
  subscriber: string,
  ref: RunRef,
  delivery: DeliveryToRun,
  attempt: number,
  signal: AbortSignal,
): Promise<HandledDelivery> {
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
    subscriber,
    eventType: delivery.eventType,
    receivedAt: delivery.receivedAt,
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
 * RETRY_BASE_SECONDS · 2^(attempt−1), or a `RetryAfterError`'s longer wait: the subscriber's own
 * schedule, or the inbox's (MAX_ATTEMPTS, RETRY_BASE_SECONDS). Every write is fenced
 * by the lease token.
 */
export async function handleFailure(
  error: unknown,
  env: Env,
  store: ProcessingStore,
  schedule: RetrySchedule,
  ref: RunRef,
  lease: DurableObjectStub<DeliveryLease>,
  token: number,
  attempt: number,
  run?: RunTiming,
): Promise<Outcome> {
  const message =
    error instanceof Error && error.message.includes(STALE_VERSION)
      ? "a newer event for the same entity was applied meanwhile; retrying to re-check the order guard"
      : describeError(error);
  if (error instanceof PermanentError || attempt >= schedule.maxAttempts) {
    const reason = error instanceof PermanentError ? message : `${message} (gave up after ${attempt} attempts)`;
    const failed = await failDelivery(env, store, ref, token, reason, run);
    if (failed === "lease_lost") return { action: "ack", reason: "lease_lost" };
    if (failed === "failed") await lease.settle(token);
    return { action: "ack", reason: "failed" };
  }
  const delaySeconds = retryDelaySeconds(error, schedule.retryBaseSeconds * 2 ** (attempt - 1));
  if ((await store.recordResult(ref, token, { kind: "retry", error: message }, Date.now(), run)) === 0) return { action: "ack", reason: "lease_lost" };
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
  store: ProcessingStore,
  ref: RunRef,
  token: number,
  error: string,
  run?: RunTiming,
): Promise<"failed" | "alert_pending" | "lease_lost"> {
  if ((await store.recordResult(ref, token, { kind: "failed", error }, Date.now(), run)) === 0) return "lease_lost";
  return (await sendDeadLetter(env, ref, error)) ? "failed" : "alert_pending";
}

/**
 * Puts a failed delivery on the dead-letter queue, for alerting. False when the send failed (it is
 * logged): the caller leaves the lease unsettled, and the dead letter is sent again (`failDelivery`).
 */
export async function sendDeadLetter(env: Env, ref: RunRef, error: string): Promise<boolean> {
  const deadLetter: DeadLetter = { ...runMessage(ref), error };
  try {
    await env.DEAD_LETTERS.send(deadLetter, { contentType: "json" });
    return true;
  } catch (sendError) {
    console.error(`dead-letter send failed for ${describeRun(ref)} (it is failed in the store; sent again after its lease):`, describeError(sendError));
    return false;
  }
}

/**
 * A stable key for downstream APIs: the same for every attempt and replay of a delivery, and for a
 * fanned-out delivery one per subscriber (two subscribers calling one API must not collide).
 */
export async function idempotencyKey(ref: RunRef): Promise<string> {
  return `whi_${toHex(await sha256(new TextEncoder().encode(leaseName(ref))))}`;
}
