import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { faultyQueue, rebindObject } from "../helpers/faults";
import { expireLease, leaseFor } from "../helpers/processing";

describe("DeliveryLease", () => {
  it("grants one claim at a time and says busy, with the lease end, to the others", async () => {
    const lease = leaseFor(env, { source: "lease", id: "one-at-a-time" });
    const claims = await Promise.all(Array.from({ length: 10 }, () => lease.claim({ source: "lease", id: "one-at-a-time" })));
    expect(claims.filter((claim) => claim.kind === "granted")).toHaveLength(1);
    const busy = claims.filter((claim) => claim.kind === "busy");
    expect(busy).toHaveLength(9);
    expect(busy.every((claim) => claim.kind === "busy" && claim.leasedUntilMs > Date.now())).toBe(true);
  });

  it("hands out a larger fencing token at every takeover, and refuses the stale one", async () => {
    const ref = { source: "lease", id: "fencing" };
    const lease = leaseFor(env, ref);
    const first = await lease.claim(ref);
    expect(await expireLease(lease)).toBe(true);
    const second = await lease.claim(ref);
    expect(first.kind).toBe("granted");
    expect(second.kind).toBe("granted");
    if (first.kind !== "granted" || second.kind !== "granted") return;
    expect(second.token).toBeGreaterThan(first.token);
    expect(first.takeover).toBe(false);
    expect(second.takeover).toBe(true);
    expect(await lease.release(first.token, Date.now())).toBe(false);
    expect(await lease.settle(first.token)).toBe(false);
    expect(await lease.settle(second.token)).toBe(true);
  });

  it("keeps tokens growing across a reset, so a token from before can never come back", async () => {
    const ref = { source: "lease", id: "reset" };
    const lease = leaseFor(env, ref);
    const before = await lease.claim(ref);
    await lease.reset();
    const after = await lease.claim(ref);
    if (before.kind !== "granted" || after.kind !== "granted") throw new Error("expected grants");
    expect(after.takeover).toBe(false);
    expect(after.token).toBeGreaterThan(before.token);
  });

  it("requeues the delivery when the alarm finds the holder gone, and marks the lease abandoned", async () => {
    const ref = { source: "lease", id: "requeue" };
    const lease = leaseFor(env, ref);
    await lease.claim(ref);
    const queue = faultyQueue(null);
    await rebindObject(lease, { DELIVERIES: queue.queue });
    expect(await expireLease(lease)).toBe(true);
    expect(queue.sent).toEqual([ref]);
    const state = await runInDurableObject(lease, (_instance, ctx) => ctx.storage.get<{ abandoned: boolean }>("lease"));
    expect(state).toMatchObject({ abandoned: true });
    // It keeps an alarm set until somebody settles the delivery.
    const alarm = await runInDurableObject(lease, (_instance, ctx) => ctx.storage.getAlarm());
    expect(alarm).toBeGreaterThan(Date.now());
    // The next claim takes over, and says so.
    expect(await lease.claim(ref)).toMatchObject({ kind: "granted", takeover: true });
  });

  it("does not abandon a lease that is still running when an earlier alarm fires", async () => {
    const ref = { source: "lease", id: "alarm-before-end" };
    const lease = leaseFor(env, ref);
    const claim = await lease.claim(ref);
    if (claim.kind !== "granted") throw new Error("expected a grant");
    const queue = faultyQueue(null);
    await rebindObject(lease, { DELIVERIES: queue.queue });
    // An alarm scheduled for an earlier lease (or a platform retry of one) runs now, mid-lease.
    expect(await runDurableObjectAlarm(lease)).toBe(true);
    expect(queue.sent).toEqual([]);
    expect(await lease.claim(ref)).toMatchObject({ kind: "busy" });
    // It waits for the end of the current lease instead.
    const alarm = await runInDurableObject(lease, (_instance, ctx) => ctx.storage.getAlarm());
    expect(alarm).toBeGreaterThan(Date.now() + 50_000);
  });

  it("extends a held lease on renew, and refuses a stale token", async () => {
    const ref = { source: "lease", id: "renew" };
    const lease = leaseFor(env, ref);
    const first = await lease.claim(ref);
    if (first.kind !== "granted") throw new Error("expected a grant");
    const alarmBefore = await runInDurableObject(lease, (_instance, ctx) => ctx.storage.getAlarm());
    const realNow = Date.now.bind(Date);
    const clock = vi.spyOn(Date, "now").mockImplementation(() => realNow() + 30_000);
    try {
      expect(await lease.renew(first.token)).toBe(true);
    } finally {
      clock.mockRestore();
    }
    const alarmAfter = await runInDurableObject(lease, (_instance, ctx) => ctx.storage.getAlarm());
    expect(alarmAfter! - alarmBefore!).toBeGreaterThanOrEqual(30_000);
    // 61 s after the claim the original lease would have ended; the renewed one has not.
    const queue = faultyQueue(null);
    await rebindObject(lease, { DELIVERIES: queue.queue });
    expect(await expireLease(lease)).toBe(true);
    expect(queue.sent).toEqual([]);
    expect(await lease.claim(ref)).toMatchObject({ kind: "busy" });
    expect(await lease.renew(first.token - 1)).toBe(false);
  });

  it("keeps a safety alarm while a released delivery waits for its retry, and requeues it if the retry never comes", async () => {
    const ref = { source: "lease", id: "released" };
    const lease = leaseFor(env, ref);
    const claim = await lease.claim(ref);
    if (claim.kind !== "granted") throw new Error("expected a grant");
    const retryAt = Date.now() + 2_000;
    expect(await lease.release(claim.token, retryAt)).toBe(true);
    const alarm = await runInDurableObject(lease, (_instance, ctx) => ctx.storage.getAlarm());
    expect(alarm).toBe(retryAt + 60_000);
    const queue = faultyQueue(null);
    await rebindObject(lease, { DELIVERIES: queue.queue });
    expect(await expireLease(lease)).toBe(true);
    expect(queue.sent).toEqual([ref]);
    // Released, not held: the retry claims at once, and it is no takeover (nobody vanished).
    const retry = await lease.claim(ref);
    expect(retry).toMatchObject({ kind: "granted", takeover: false });
  });

  it("ignores a late settle after a reset: the replay's claim is granted, not turned away as settled", async () => {
    const ref = { source: "lease", id: "late-settle" };
    const lease = leaseFor(env, ref);
    const before = await lease.claim(ref);
    if (before.kind !== "granted") throw new Error("expected a grant");
    await lease.reset(); // an admin replay
    expect(await lease.settle(before.token)).toBe(true); // the worker of before the replay, late
    expect(await lease.claim(ref)).toMatchObject({ kind: "granted" });
  });

  it("leaves no storage and no alarm once settled", async () => {
    const ref = { source: "lease", id: "settled" };
    const lease = leaseFor(env, ref);
    const claim = await lease.claim(ref);
    if (claim.kind !== "granted") throw new Error("expected a grant");
    expect(await lease.settle(claim.token)).toBe(true);
    const leftovers = await runInDurableObject(lease, async (_instance, ctx) => ({
      keys: [...(await ctx.storage.list()).keys()],
      alarm: await ctx.storage.getAlarm(),
    }));
    expect(leftovers).toEqual({ keys: [], alarm: null });
    expect(await lease.claim(ref)).toEqual({ kind: "settled" });
  });
});
