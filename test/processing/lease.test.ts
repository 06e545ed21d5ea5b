import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { leaseFor } from "../helpers/processing";

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
    expect(await runDurableObjectAlarm(lease)).toBe(true);
    const second = await lease.claim(ref);
    expect(first.kind).toBe("granted");
    expect(second.kind).toBe("granted");
    if (first.kind !== "granted" || second.kind !== "granted") return;
    expect(second.token).toBeGreaterThan(first.token);
    expect(second.attempt).toBe(2);
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
    expect(after.attempt).toBe(1);
    expect(after.token).toBeGreaterThan(before.token);
  });

  it("requeues the delivery when the alarm finds the holder gone, and marks the lease abandoned", async () => {
    const ref = { source: "lease", id: "requeue" };
    const lease = leaseFor(env, ref);
    await lease.claim(ref);
    expect(await runDurableObjectAlarm(lease)).toBe(true);
    const state = await runInDurableObject(lease, (_instance, ctx) => ctx.storage.get<{ abandoned: boolean; attempts: number }>("lease"));
    expect(state).toMatchObject({ abandoned: true, attempts: 1 });
    // It keeps an alarm set until somebody settles the delivery.
    const alarm = await runInDurableObject(lease, (_instance, ctx) => ctx.storage.getAlarm());
    expect(alarm).toBeGreaterThan(Date.now());
  });

  it("keeps a safety alarm while a released delivery waits for its retry", async () => {
    const ref = { source: "lease", id: "released" };
    const lease = leaseFor(env, ref);
    const claim = await lease.claim(ref);
    if (claim.kind !== "granted") throw new Error("expected a grant");
    const retryAt = Date.now() + 2_000;
    expect(await lease.release(claim.token, retryAt)).toBe(true);
    const alarm = await runInDurableObject(lease, (_instance, ctx) => ctx.storage.getAlarm());
    expect(alarm).toBe(retryAt + 60_000);
    // Released, not held: the retry can claim at once, as attempt 2.
    const retry = await lease.claim(ref);
    expect(retry).toMatchObject({ kind: "granted", attempt: 2 });
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
