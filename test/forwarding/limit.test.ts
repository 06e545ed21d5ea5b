// The per-destination concurrency limit, through the real consumer: the rest wait their turn on
// the queue, none failed or charged an attempt, and the backend never sees more than the limit.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { checkForwardSecret } from "../../src/config/destination";
import { forwardDelivery } from "../../src/forwarding/forward";
import { limiterFor } from "../../src/forwarding/limiter";
import { defineHandlers } from "../../src/handler-api";
import type { DeliveryRef } from "../../src/processing/messages";
import { backendCalls, FORWARD_SECRET, forwardingTo, planBackend } from "../helpers/forward-backend";
import { consume, storeDelivery } from "../helpers/processing";
import { deliveryRow } from "../helpers/store-db";

const NO_HANDLERS = defineHandlers({});

describe("the concurrency limit", () => {
  it("sends at most the limit at once; the others are deferred, uncounted, and all are sent once in the end", async () => {
    // Each answer takes 800 ms: long enough that all seven ask for a slot while the first two are out.
    const url = await planBackend("/limited", { status: 200, delayMs: 800 });
    const refs: DeliveryRef[] = Array.from({ length: 7 }, (_, index) => ({ source: "standard", id: `limited-${index}` }));
    for (const ref of refs) await storeDelivery(ref, { type: "invoice.paid" }, "invoice.paid");
    const vars = forwardingTo("standard", url, { STANDARD_FORWARD_CONCURRENCY: "2" });

    // Two consumers at once, as two isolates would be: the limit holds across them.
    const [first, second] = await Promise.all([consume(refs.slice(0, 4), NO_HANDLERS, vars), consume(refs.slice(4), NO_HANDLERS, vars)]);
    const outcomes = [...first.outcomes, ...second.outcomes];
    const done = outcomes.filter((outcome) => outcome.reason === "done");
    const deferred = outcomes.filter((outcome) => outcome.reason === "deferred");
    expect(done.length + deferred.length).toBe(7);
    expect(deferred.length).toBeGreaterThanOrEqual(5);
    for (const outcome of deferred) expect(outcome).toMatchObject({ action: "retry", delaySeconds: expect.any(Number) });
    expect(Math.min(...[...first.retryDelays, ...second.retryDelays].map(Number))).toBeGreaterThanOrEqual(1);
    for (const [index, outcome] of outcomes.entries()) {
      if (outcome.reason === "deferred") expect(await deliveryRow("standard", refs[index]!.id)).toMatchObject({ status: "received", attempts: 0, error: null });
    }

    // The queue brings the deferred back; here, rounds of the consumer until none is left.
    let waiting = refs.filter((_, index) => outcomes[index]!.reason === "deferred");
    for (let round = 0; round < 10 && waiting.length > 0; round++) {
      const run = await consume(waiting, NO_HANDLERS, vars);
      waiting = waiting.filter((_, index) => run.outcomes[index]!.reason === "deferred");
    }
    expect(waiting).toEqual([]);
    for (const ref of refs) expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1 });

    const { calls, maxInFlight } = await backendCalls("/limited");
    expect(maxInFlight).toBe(2);
    expect(calls.map((call) => call.headers["webhook-inbox-delivery-id"]).sort()).toEqual(refs.map((ref) => ref.id).sort());
  });

  it("keeps its slot when the handler's deadline aborts the request mid-flight, and gives it back when nothing was sent", async () => {
    const url = await planBackend("/aborted", { status: 200, delayMs: 5_000 });
    const destination = { url, key: (checkForwardSecret(FORWARD_SECRET) as { key: Uint8Array }).key, timeoutSeconds: 30, concurrency: 5, maxAttempts: 5, retryBaseSeconds: 2, breaker: { failures: 5, openSeconds: 30 }, filterJson: null };
    const delivery = { source: "standard", deliveryId: "aborted", eventType: null, contentType: null, body: new TextEncoder().encode("{}"), idempotencyKey: "whi_aborted", attempt: 1 };
    expect(await limiterFor(env, url).inFlight()).toBe(0);
    const deadline = new AbortController();
    const forwarding = forwardDelivery(env, destination, delivery, deadline.signal);
    await expect.poll(async () => (await backendCalls("/aborted")).calls.length, { timeout: 5_000 }).toBe(1);
    deadline.abort(new Error("the handler did not return within 1 s"));
    await expect(forwarding).rejects.toThrow("the handler did not return");
    expect(await limiterFor(env, url).inFlight()).toBe(1);

    // Aborted before the request went out (the same origin, so the same limiter): nothing runs
    // there, and its slot is given back.
    await expect(forwardDelivery(env, destination, delivery, AbortSignal.abort(new Error("time is up")))).rejects.toThrow("time is up");
    expect(await limiterFor(env, url).inFlight()).toBe(1);
    expect((await backendCalls("/aborted")).calls).toHaveLength(1);
  });

  it("a 2xx stands when the limiter hangs on being told: the delivery is done, forwarded once, not retried at the handler's deadline", async () => {
    const { ref, outcomes } = await forwardWhileSettleHangs("settle-hangs", 200, 2);
    expect(outcomes.map((outcome) => outcome.reason)).toEqual(["done"]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1 });
    expect((await backendCalls("/settle-hangs")).calls).toHaveLength(1);
  });

  it("a 4xx stays a 4xx when the limiter hangs on being told: failed after a short wait, not retried at the handler's deadline", { timeout: 30_000 }, async () => {
    // The handler's deadline is 10 s; the wait for the limiter is SETTLE_WAIT_MS (5 s).
    const { ref, outcomes } = await forwardWhileSettleHangs("settle-hangs-400", 400, 10);
    expect(outcomes.map((outcome) => outcome.reason)).toEqual(["failed"]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "failed", attempts: 1 });
    expect((await backendCalls("/settle-hangs-400")).calls).toHaveLength(1);
  });
});

/**
 * Stores delivery `id` and runs it through the consumer, forwarded to a backend answering `status`,
 * with a limiter that never answers a settle and a handler deadline of `handlerSeconds`.
 */
async function forwardWhileSettleHangs(id: string, status: number, handlerSeconds: number) {
  const url = await planBackend(`/${id}`, { status });
  const ref = { source: "standard", id };
  await storeDelivery(ref, { type: "invoice.paid" }, "invoice.paid");
  const vars = { ...forwardingTo("standard", url, { STANDARD_FORWARD_TIMEOUT_SECONDS: "1", HANDLER_TIMEOUT_SECONDS: String(handlerSeconds) }), FORWARD_LIMITER: hangingSettle() };
  const { outcomes } = await consume([ref], NO_HANDLERS, vars);
  return { ref, outcomes };
}

/** A FORWARD_LIMITER whose objects grant slots as the real ones do, then never answer a settle. */
function hangingSettle(): Env["FORWARD_LIMITER"] {
  return new Proxy(env.FORWARD_LIMITER, {
    get(target, key) {
      if (key !== "get") {
        const value = Reflect.get(target, key, target);
        return typeof value === "function" ? value.bind(target) : value;
      }
      return (id: DurableObjectId) => {
        const stub = target.get(id);
        return new Proxy(stub, {
          get(stubTarget, method) {
            if (method === "settle") return () => new Promise(() => {});
            if (typeof method !== "string" || !["acquire", "inFlight"].includes(method)) return Reflect.get(stubTarget, method);
            // An RPC stub's methods are called on the stub itself.
            return (...args: unknown[]) => (stubTarget as unknown as Record<string, (...a: unknown[]) => unknown>)[method]!(...args);
          },
        });
      };
    },
  });
}
