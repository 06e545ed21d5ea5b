// The circuit breaker of a forward destination in the real limiter object and forward(), against a
// real HTTP backend (test/setup/forward-backend.mjs) and the real consumer: what opens it, that its
// deliveries wait without using attempts, the probe, and the order a backlog is let through in.
import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { checkForwardSecret, type ForwardDestination } from "../../src/config/destination";
import { forwardDelivery } from "../../src/forwarding/forward";
import { limiterFor } from "../../src/forwarding/limiter";
import { DeferredError, defineHandlers, PermanentError, RetryAfterError } from "../../src/handler-api";
import { backendCalls, FORWARD_SECRET, forwardingTo, planBackend } from "../helpers/forward-backend";
import { consume, storeDelivery } from "../helpers/processing";
import { deliveryRow } from "../helpers/store-db";

const NO_HANDLERS = defineHandlers({});
const KEY = (checkForwardSecret(FORWARD_SECRET) as { key: Uint8Array }).key;

function destinationAt(url: string, failures = 2, openSeconds = 10): ForwardDestination {
  return { url, key: KEY, timeoutSeconds: 5, concurrency: 2, maxAttempts: 5, retryBaseSeconds: 2, breaker: { failures, openSeconds }, filterJson: null };
}

function deliveryNo(index: number, receivedAt = new Date(Date.UTC(2026, 0, 1, 0, 0, index)).toISOString()) {
  return { source: "standard", deliveryId: `d${index}`, eventType: null, contentType: null, body: new TextEncoder().encode("{}"), idempotencyKey: `whi_d${index}`, attempt: 1, receivedAt };
}

/** Runs one forward and tells what it threw (or "delivered"). */
async function outcomeOf(destination: ForwardDestination, delivery: ReturnType<typeof deliveryNo>): Promise<string> {
  try {
    await forwardDelivery(env, destination, delivery, new AbortController().signal);
    return "delivered";
  } catch (error) {
    if (error instanceof DeferredError) return `deferred ${error.delaySeconds}`;
    if (error instanceof RetryAfterError) return "retry";
    if (error instanceof PermanentError) return "rejected";
    throw error;
  }
}

/** Moves the clock of this isolate (the object's too: the pool runs both in one) `ms` ahead. */
function clockAhead(ms: number) {
  const realNow = Date.now.bind(Date);
  vi.spyOn(Date, "now").mockImplementation(() => realNow() + ms);
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("the circuit breaker", () => {
  it("opens after BREAKER_FAILURES 503s in a row, defers without a request while open, probes after the open period, and closes when the probe succeeds", async () => {
    const url = await planBackend("/breaker-503", { status: 503 }, { status: 503 }, { status: 503 }, { status: 200 });
    const destination = destinationAt(url);
    const limiter = limiterFor(env, url);
    expect(await outcomeOf(destination, deliveryNo(1))).toBe("retry");
    expect((await limiter.breakerView(url)).status).toBe("closed");
    expect(await outcomeOf(destination, deliveryNo(2))).toBe("retry");
    const opened = await limiter.breakerView(url);
    expect(opened).toMatchObject({ status: "open", failures: 2 });
    // While open: deferred until the probe, nothing sent (d2, whose failure opened it, waits its turn too).
    expect(await outcomeOf(destination, deliveryNo(2))).toMatch(/^deferred (9|10)$/);
    expect(await outcomeOf(destination, deliveryNo(3))).toMatch(/^deferred/);
    expect((await backendCalls("/breaker-503")).calls).toHaveLength(2);

    // After the open period, one probe goes (the oldest waiting); it fails (the third 503): open again, for twice as long.
    clockAhead(10_500);
    expect(await outcomeOf(destination, deliveryNo(2))).toBe("retry");
    expect(await limiter.breakerView(url)).toMatchObject({ status: "open" });
    expect(await outcomeOf(destination, deliveryNo(2))).toMatch(/^deferred (19|20)$/);
    vi.restoreAllMocks();

    // The next probe (the 200) closes it; then deliveries flow.
    clockAhead(10_500 + 20_500);
    expect(await outcomeOf(destination, deliveryNo(2))).toBe("delivered");
    expect(await limiter.breakerView(url)).toMatchObject({ status: "closed", failures: 0 });
    expect(await outcomeOf(destination, deliveryNo(3))).toBe("delivered");
    expect((await backendCalls("/breaker-503")).calls.map((call) => call.headers["webhook-inbox-delivery-id"])).toEqual(["d1", "d2", "d2", "d2", "d3"]);
  });

  it("counts refused connections and 429 as failures, and a 4xx or a redirect not at all", async () => {
    // Nothing listens on port 9 of this machine: connection refused.
    const refused = destinationAt("http://127.0.0.1:9/hooks");
    expect(await outcomeOf(refused, deliveryNo(1))).toBe("retry");
    expect(await outcomeOf(refused, deliveryNo(2))).toBe("retry");
    expect((await limiterFor(env, refused.url).breakerView(refused.url)).status).toBe("open");

    const throttled = destinationAt(await planBackend("/breaker-429", { status: 429 }));
    for (const index of [1, 2]) expect(await outcomeOf(throttled, deliveryNo(index))).toBe("retry");
    expect((await limiterFor(env, throttled.url).breakerView(throttled.url)).status).toBe("open");

    const picky = destinationAt(await planBackend("/breaker-4xx", { status: 400 }, { status: 422 }, { status: 301, headers: { location: "/x" } }, { status: 404 }));
    for (const index of [1, 2, 3, 4]) expect(await outcomeOf(picky, deliveryNo(index))).toBe("rejected");
    expect(await limiterFor(env, picky.url).breakerView(picky.url)).toMatchObject({ status: "closed", failures: 0 });
    expect((await backendCalls("/breaker-4xx")).calls).toHaveLength(4);
  });

  it("lets exactly one probe through in half-open; the others wait for its answer", async () => {
    const url = await planBackend("/breaker-probe", { status: 503 }, { status: 200, delayMs: 1_500 });
    const destination = destinationAt(url, 1);
    expect(await outcomeOf(destination, deliveryNo(1))).toBe("retry");
    clockAhead(10_500);
    // d1, whose failure opened it, kept its place: it is the probe.
    const probe = outcomeOf(destination, deliveryNo(1));
    await expect.poll(async () => (await backendCalls("/breaker-probe")).calls.length).toBe(2);
    expect(await limiterFor(env, url).breakerView(url)).toMatchObject({ status: "half-open" });
    const other = await outcomeOf(destination, deliveryNo(3));
    expect(other).toMatch(/^deferred [1-5]$/);
    expect(await probe).toBe("delivered");
    expect(await outcomeOf(destination, deliveryNo(3))).toBe("delivered");
    expect((await backendCalls("/breaker-probe")).calls).toHaveLength(3);
  });

  it("is kept in storage: an evicted object still knows the destination is down", async () => {
    const url = await planBackend("/breaker-evicted", { status: 500 });
    const destination = destinationAt(url, 1);
    expect(await outcomeOf(destination, deliveryNo(1))).toBe("retry");
    await evictDurableObject(limiterFor(env, url));
    expect(await limiterFor(env, url).breakerView(url)).toMatchObject({ status: "open" });
    expect(await outcomeOf(destination, deliveryNo(2))).toMatch(/^deferred/);
    expect((await backendCalls("/breaker-evicted")).calls).toHaveLength(1);
  });

  it("after it closes, lets a newer delivery go only when no older one that waited is still waiting", async () => {
    const url = await planBackend("/breaker-order", { status: 503 }, { status: 200 });
    const destination = destinationAt(url, 1);
    expect(await outcomeOf(destination, deliveryNo(1))).toBe("retry");
    // Deferred while open, newest first: each registers when it was received.
    for (const index of [5, 4, 3, 2]) expect(await outcomeOf(destination, deliveryNo(index))).toMatch(/^deferred/);
    clockAhead(10_500);
    // The newer ones come back first: each waits for an older one, 1 s; d1, whose failure opened
    // it, kept its place while its retry was due.
    for (const index of [4, 3, 2]) expect(await outcomeOf(destination, deliveryNo(index))).toBe("deferred 1");
    // The oldest probes and closes it; then the rest in order of arrival.
    for (const index of [1, 2, 3, 4, 5]) expect(await outcomeOf(destination, deliveryNo(index))).toBe("delivered");
    expect((await backendCalls("/breaker-order")).calls.map((call) => call.headers["webhook-inbox-delivery-id"])).toEqual(["d1", "d1", "d2", "d3", "d4", "d5"]);
  });

  it("leaves the usual contention for slots (no outage) unordered: a delivery refused a slot holds no newer one back", async () => {
    const url = "https://contention.example.com/hooks";
    const limiter = limiterFor(env, url);
    const options = (receivedAtMs: number) => ({ destination: url, breaker: { failures: 5, openSeconds: 30 }, receivedAtMs });
    expect(await limiter.acquire("a", 1, 30_000, "a", options(3))).toEqual({ granted: true });
    expect(await limiter.acquire("old", 1, 30_000, "old", options(1))).toMatchObject({ granted: false, reason: "full" });
    await limiter.release("a");
    expect(await limiter.acquire("new", 1, 30_000, "new", options(2))).toEqual({ granted: true });
    expect((await limiter.breakerView(url)).waiting).toBe(0);
  });

  it("uses no attempt while open, through the real consumer, and a 4xx destination never opens it", async () => {
    const url = await planBackend("/breaker-consumer", { status: 503 });
    const vars = forwardingTo("standard", url, { STANDARD_FORWARD_BREAKER_FAILURES: "1", STANDARD_FORWARD_BREAKER_OPEN_SECONDS: "60" });
    const first = { source: "standard", id: "breaker-consumer-1" };
    const second = { source: "standard", id: "breaker-consumer-2" };
    await storeDelivery(first, { type: "invoice.paid" }, "invoice.paid");
    await storeDelivery(second, { type: "invoice.paid" }, "invoice.paid");
    await consume([first], NO_HANDLERS, vars);
    expect(await deliveryRow(first.source, first.id)).toMatchObject({ attempts: 1 });
    const { outcomes } = await consume([second, first], NO_HANDLERS, vars);
    expect(outcomes).toEqual([
      { action: "retry", reason: "deferred", delaySeconds: expect.any(Number) },
      { action: "retry", reason: "deferred", delaySeconds: expect.any(Number) },
    ]);
    expect(await deliveryRow(second.source, second.id)).toMatchObject({ status: "received", attempts: 0 });
    expect(await deliveryRow(first.source, first.id)).toMatchObject({ attempts: 1 });
    expect((await backendCalls("/breaker-consumer")).calls).toHaveLength(1);

    const rejecting = await planBackend("/breaker-consumer-4xx", { status: 400 });
    const refs = [1, 2, 3].map((index) => ({ source: "standard", id: `breaker-4xx-${index}` }));
    for (const ref of refs) await storeDelivery(ref, { type: "invoice.paid" }, "invoice.paid");
    await consume(refs, NO_HANDLERS, forwardingTo("standard", rejecting, { STANDARD_FORWARD_BREAKER_FAILURES: "1" }));
    for (const ref of refs) expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "failed", attempts: 1 });
    expect((await backendCalls("/breaker-consumer-4xx")).calls).toHaveLength(3);
    expect((await limiterFor(env, rejecting).breakerView(rejecting)).status).toBe("closed");
  });
});
