/**
 * The queue consumer: each message names a stored delivery; process it effectively once.
 *
 * Per message: claim the delivery's lease (DeliveryLease), mark it `processing` in D1 (which
 * also reads the body), run the user's handler, then commit the handler's effects together
 * with the `done` mark in one fenced D1 transaction, and settle the lease. What a handler throws
 * decides the rest: `PermanentError` fails at once; anything else retries with backoff until
 * MAX_ATTEMPTS, then fails. Failed deliveries go to the dead-letter queue.
 *
 * Every message is acked only once its delivery is handled, recorded, or known to be someone
 * else's (busy, settled, lease lost). When D1 or the lease object itself fails, the message is
 * retried and nothing is acked; the queue's own max_retries and dead-letter queue are the last
 * resort behind that, and the lease's alarm and the sweeper behind those.
 */
import { loadConfig, type InboxConfig } from "../config";
import { commitDone, markFailed, markProcessing, markRetrying } from "../store/lifecycle";
import { describeError, PermanentError } from "./errors";
import { findHandler, parseEvent, type HandlerContext, type HandlerRegistry } from "./handlers";
import type { DeliveryLease } from "./lease";
import { isDeliveryRef, leaseName, type DeadLetter, type DeliveryRef } from "./messages";
import { createOrderGuard, STALE_VERSION } from "./order-guard";

/** Messages of one batch processed at once: enough to overlap D1 and RPC round trips, bounded. */
export const BATCH_CONCURRENCY = 8;
/** Delay before retrying a message whose processing hit an infrastructure error. */
export const INFRASTRUCTURE_RETRY_SECONDS = 10;

/** What became of one message; `reason` is for logs and tests. */
export type Outcome =
  | { readonly action: "ack"; readonly reason: "done" | "unhandled" | "failed" | "busy" | "settled" | "lease_lost" | "exhausted" | "malformed" }
  | { readonly action: "retry"; readonly reason: "handler_error" | "infrastructure"; readonly delaySeconds: number };

/** Processes a batch from `webhook-deliveries`; each message is acked or retried on its own. */
export async function consumeDeliveries(batch: MessageBatch<unknown>, env: Env, handlers: HandlerRegistry): Promise<Outcome[]> {
  const config = loadConfig(env);
  return mapConcurrently(batch.messages, BATCH_CONCURRENCY, async (message) => {
    const outcome = await processMessage(message.body, env, config, handlers);
    if (outcome.action === "ack") message.ack();
    else message.retry({ delaySeconds: outcome.delaySeconds });
    return outcome;
  });
}

async function processMessage(body: unknown, env: Env, config: InboxConfig, handlers: HandlerRegistry): Promise<Outcome> {
  if (!isDeliveryRef(body)) {
    // Only a bug or a hand-sent message looks like this; there is no delivery to record it on.
    console.error("dropping a malformed queue message:", JSON.stringify(body)?.slice(0, 200));
    return { action: "ack", reason: "malformed" };
  }
  try {
    return await processDelivery(body, env, config, handlers);
  } catch (error) {
    console.error(`processing ${body.source}/${body.id} hit an infrastructure error, will retry:`, describeError(error));
    return { action: "retry", reason: "infrastructure", delaySeconds: INFRASTRUCTURE_RETRY_SECONDS };
  }
}

/** The lease object of one delivery. */
export function leaseFor(env: Env, ref: DeliveryRef): DurableObjectStub<DeliveryLease> {
  return env.DELIVERY_LEASE.get(env.DELIVERY_LEASE.idFromName(leaseName(ref)));
}

async function processDelivery(ref: DeliveryRef, env: Env, config: InboxConfig, handlers: HandlerRegistry): Promise<Outcome> {
  const lease = leaseFor(env, ref);
  const claim = await lease.claim(ref);
  if (claim.kind === "busy" || claim.kind === "settled") {
    // Someone holds it (and its alarm will requeue it if they die), or it is finished.
    return { action: "ack", reason: claim.kind };
  }
  if (claim.kind === "exhausted") {
    await failDelivery(env, ref, null, `gave up: the worker kept crashing (${claim.attempts} attempts without a result)`);
    await lease.settle(claim.token);
    return { action: "ack", reason: "exhausted" };
  }

  const { token, attempt } = claim;
  const delivery = await markProcessing(env.DB, ref, token, attempt, Date.now());
  if (!delivery) {
    // Done or failed already (the D1 row is the judge), or a newer claim got there first.
    await lease.settle(token);
    return { action: "ack", reason: "settled" };
  }

  const handler = findHandler(handlers, ref.source, delivery.eventType);
  try {
    const effects: D1PreparedStatement[] = [];
    if (handler) {
      const ctx: HandlerContext = {
        deliveryId: ref.id,
        source: ref.source,
        eventType: delivery.eventType,
        attempt,
        env,
        idempotencyKey: await idempotencyKey(ref),
        rawBody: delivery.body,
        effect: (...statements) => void effects.push(...statements),
        order: createOrderGuard(env.DB, ref, (statement) => void effects.push(statement)),
      };
      const returned = await handler(parseEvent(delivery.body), ctx);
      if (returned) effects.push(...returned);
    }
    if ((await commitDone(env.DB, ref, token, handler !== undefined, effects, Date.now())) === "lease_lost") {
      // Our lease ran out and another worker took over: its result stands, ours committed nothing.
      return { action: "ack", reason: "lease_lost" };
    }
    await lease.settle(token);
    return { action: "ack", reason: handler ? "done" : "unhandled" };
  } catch (error) {
    return await handleFailure(error, ref, token, attempt, env, config, lease);
  }
}

async function handleFailure(
  error: unknown,
  ref: DeliveryRef,
  token: number,
  attempt: number,
  env: Env,
  config: InboxConfig,
  lease: DurableObjectStub<DeliveryLease>,
): Promise<Outcome> {
  const message =
    error instanceof Error && error.message.includes(STALE_VERSION)
      ? "a newer event for the same entity was applied meanwhile; retrying to re-check the order guard"
      : describeError(error);
  if (error instanceof PermanentError || attempt >= config.maxAttempts) {
    const reason = error instanceof PermanentError ? message : `${message} (gave up after ${attempt} attempts)`;
    if (!(await failDelivery(env, ref, token, reason))) return { action: "ack", reason: "lease_lost" };
    await lease.settle(token);
    return { action: "ack", reason: "failed" };
  }
  const delaySeconds = config.retryBaseSeconds * 2 ** (attempt - 1);
  if (!(await markRetrying(env.DB, ref, token, message, Date.now()))) return { action: "ack", reason: "lease_lost" };
  await lease.release(token, Date.now() + delaySeconds * 1000);
  return { action: "retry", reason: "handler_error", delaySeconds };
}

/**
 * Records a delivery as failed, then dead-letters it. False when the fence refused (another
 * worker owns it). The D1 row is the record; a failed dead-letter send is only logged.
 */
async function failDelivery(env: Env, ref: DeliveryRef, token: number | null, error: string): Promise<boolean> {
  if (!(await markFailed(env.DB, ref, token, error, Date.now()))) return false;
  const deadLetter: DeadLetter = { source: ref.source, id: ref.id, error };
  await env.DEAD_LETTERS.send(deadLetter, { contentType: "json" }).catch((sendError: unknown) => {
    console.error(`dead-letter send failed for ${ref.source}/${ref.id} (it is failed in D1):`, describeError(sendError));
  });
  return true;
}

/** A stable key for downstream APIs: the same for every attempt and replay of a delivery. */
export async function idempotencyKey(ref: DeliveryRef): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(leaseName(ref)));
  return `whi_${[...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join("")}`;
}

/** `fn` over `items` with at most `limit` running at once, results in order. */
async function mapConcurrently<Item, Result>(items: readonly Item[], limit: number, fn: (item: Item) => Promise<Result>): Promise<Result[]> {
  const results: Result[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
