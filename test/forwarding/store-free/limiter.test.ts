import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { limiterFor } from "../../../src/forwarding/limiter";

const HOLD_MS = 45_000;

/**
 * Evicts the object's instance (the runtime's own eviction, which workerd does not log as an
 * uncaught exception as it does a `ctx.abort()`): the next call meets a fresh one, storage kept.
 */
async function evict(url: string) {
  const stub = limiterFor(env, url);
  await runInDurableObject(stub, (instance) => void ((instance as unknown as { evicted?: true }).evicted = true));
  await evictDurableObject(stub);
  const fresh = limiterFor(env, url);
  // A fresh instance: the marker set on the old one is gone.
  expect(await runInDurableObject(fresh, (instance) => (instance as unknown as { evicted?: true }).evicted)).toBeUndefined();
  return fresh;
}

describe("ForwardLimiter", () => {
  it("grants up to the limit, refuses the next with a wait of at least a second, and grants again once one is back", async () => {
    const limiter = limiterFor(env, "https://grants.example.com/hooks");
    for (const slot of ["a", "b", "c"]) expect(await limiter.acquire(slot, 3, HOLD_MS, slot)).toEqual({ granted: true });
    const refused = await limiter.acquire("d", 3, HOLD_MS, "d");
    expect(refused).toEqual({ granted: false, waitSeconds: expect.any(Number), reason: "full" });
    expect((refused as { waitSeconds: number }).waitSeconds).toBeGreaterThanOrEqual(1);
    expect(await limiter.inFlight()).toBe(3);
    await limiter.release("b");
    expect(await limiter.acquire("d", 3, HOLD_MS, "d")).toEqual({ granted: true });
  });

  it("grants a slot held already again (a repeated call), counting it once", async () => {
    const limiter = limiterFor(env, "https://repeat.example.com/");
    expect(await limiter.acquire("same", 1, HOLD_MS, "same")).toEqual({ granted: true });
    expect(await limiter.acquire("same", 1, HOLD_MS, "same")).toEqual({ granted: true });
    expect(await limiter.inFlight()).toBe(1);
  });

  it("lets a slot expire, so that a worker that died mid-request holds none for good", async () => {
    const limiter = limiterFor(env, "https://expiry.example.com/");
    expect(await limiter.acquire("dead-worker", 1, 1_000, "dead-worker")).toEqual({ granted: true });
    expect((await limiter.acquire("next", 1, 1_000, "next")).granted).toBe(false);
    const realNow = Date.now.bind(Date);
    // The clock of the object's isolate: this test shares it (vitest-plugin runs both in one).
    const clock = vi.spyOn(Date, "now").mockImplementation(() => realNow() + 2_000);
    try {
      expect(await limiter.acquire("next", 1, 1_000, "next")).toEqual({ granted: true });
    } finally {
      clock.mockRestore();
    }
  });

  it("forgets the grant time of a slot that expired unreleased (a timed-out request, a dead worker)", async () => {
    const limiter = limiterFor(env, "https://forgotten.example.com/");
    expect(await limiter.acquire("timed-out", 5, 1_000, "timed-out")).toEqual({ granted: true });
    expect(await limiter.acquire("running", 5, HOLD_MS, "running")).toEqual({ granted: true });
    expect(await limiter.timedSlots()).toBe(2);
    const realNow = Date.now.bind(Date);
    const clock = vi.spyOn(Date, "now").mockImplementation(() => realNow() + 2_000);
    try {
      expect(await limiter.acquire("next", 5, HOLD_MS, "next")).toEqual({ granted: true });
    } finally {
      clock.mockRestore();
    }
    expect(await limiter.inFlight()).toBe(2);
    expect(await limiter.timedSlots()).toBe(2);
  });

  it("keeps its slots across an eviction (they are stored)", async () => {
    const url = "https://evicted.example.com/";
    const limiter = limiterFor(env, url);
    expect(await limiter.acquire("held-1", 2, HOLD_MS, "held-1")).toEqual({ granted: true });
    expect(await limiter.acquire("held-2", 2, HOLD_MS, "held-2")).toEqual({ granted: true });
    const fresh = await evict(url);
    expect(await fresh.inFlight()).toBe(2);
    expect((await fresh.acquire("third", 2, HOLD_MS, "third")).granted).toBe(false);
    await fresh.release("held-1");
    expect(await fresh.acquire("third", 2, HOLD_MS, "third")).toEqual({ granted: true });
  });

  it("is one per origin: two paths of a service share its slots, another host has its own", async () => {
    expect(await limiterFor(env, "https://shared.example.com/a").acquire("one", 1, HOLD_MS, "one")).toEqual({ granted: true });
    expect((await limiterFor(env, "https://shared.example.com/b?x=1").acquire("two", 1, HOLD_MS, "two")).granted).toBe(false);
    expect(await limiterFor(env, "https://other.example.com/a").acquire("two", 1, HOLD_MS, "two")).toEqual({ granted: true });
  });

  it("suggests waits spread over the deliveries waiting, each counted once however often it asks", async () => {
    const limiter = limiterFor(env, "https://hints.example.com/");
    expect(await limiter.acquire("out", 1, HOLD_MS, "out")).toEqual({ granted: true });
    const waits = async (waiter: string, times: number) => {
      const seconds = [];
      for (let index = 0; index < times; index++) seconds.push(((await limiter.acquire(`${waiter}-${index}`, 1, HOLD_MS, waiter)) as { waitSeconds: number }).waitSeconds);
      return seconds;
    };
    // One delivery waiting, asking 40 times: one round of about a second (no slot timed yet).
    expect(new Set(await waits("alone", 40))).toEqual(new Set([1]));
    // Four more waiting: five rounds of a second each, at most; the waits spread within them.
    for (const waiter of ["w1", "w2", "w3", "w4"]) await waits(waiter, 1);
    const spread = await waits("w5", 40);
    expect(Math.min(...spread)).toBeGreaterThanOrEqual(1);
    expect(Math.max(...spread)).toBeLessThanOrEqual(6);
    expect(new Set(spread).size).toBeGreaterThan(1);
  });

  it("never grants more than the limit to many callers at once", async () => {
    const limiter = limiterFor(env, "https://race.example.com/");
    const answers = await Promise.all(Array.from({ length: 40 }, (_, index) => limiter.acquire(`slot-${index}`, 4, HOLD_MS, `slot-${index}`)));
    expect(answers.filter((answer) => answer.granted)).toHaveLength(4);
  });
});
