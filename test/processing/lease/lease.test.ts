import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { DeliveryLease } from "../../../src/processing/lease";
import type { DeliveryRef } from "../../../src/processing/messages";
import { faultyQueue, rebindObject } from "../../helpers/faults";
import { capturingQueue, consume, expireLease, leaseFor, storeDelivery } from "../../helpers/processing";
import { unreachableStore } from "../../helpers/store-faults";
import { fireAlarm } from "../../helpers/alarms";
import { defineHandlers, PermanentError, subscribers } from "../../../src/handler-api";

/** The storage calls that write (each a billed row, or more for deleteAll), as the object makes them. */
const WRITES = ["put", "setAlarm", "deleteAlarm", "delete", "deleteAll"] as const;
type WriteCounts = Record<(typeof WRITES)[number], number>;

/**
 * Counts the storage writes of the object's current instance from now on: its storage methods are
 * wrapped in place (as bench/meter.spec.ts does), so the counts stop with an eviction.
 */
async function countWrites(lease: DurableObjectStub<DeliveryLease>): Promise<WriteCounts> {
  const counts = Object.fromEntries(WRITES.map((name) => [name, 0])) as WriteCounts;
  await runInDurableObject(lease, (_instance, ctx) => {
    const storage = ctx.storage as unknown as Record<string, (...args: unknown[]) => unknown>;
    for (const name of WRITES) {
      const real = storage[name]!.bind(storage);
      storage[name] = (...args: unknown[]) => {
        counts[name]++;
        return real(...args);
      };
    }
  });
  return counts;
}

/**
 * An eviction (as a restart would be): the runtime's own `evictDurableObject` ends the object's
 * instance, so the next call meets a fresh one with nothing in memory, while its storage and alarm
 * stay. This returns a new stub. (A `ctx.abort()` did the same, but workerd logged each one as an
 * "uncaught exception", which read like a failure in the test output.)
 */
async function evict(ref: DeliveryRef): Promise<DurableObjectStub<DeliveryLease>> {
  const stub = leaseFor(env, ref);
  await runInDurableObject(stub, (instance) => {
    (instance as unknown as { evicted?: true }).evicted = true;
  });
  await evictDurableObject(stub);
  const fresh = leaseFor(env, ref);
  // A fresh instance: the marker set on the old one is gone.
  expect(await runInDurableObject(fresh, (instance) => (instance as unknown as { evicted?: true }).evicted)).toBeUndefined();
  return fresh;
}

/** What the object keeps in storage: its keys and its alarm. */
function stored(lease: DurableObjectStub<DeliveryLease>) {
  return runInDurableObject(lease, async (_instance, ctx) => ({
    keys: [...(await ctx.storage.list()).keys()],
    alarm: await ctx.storage.getAlarm(),
  }));
}

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
    // Stored (a rare path), so that the next claim takes over even after an eviction.
    const state = await runInDurableObject(lease, (_instance, ctx) => ctx.storage.get<{ state: string }>("lease"));
    expect(state).toMatchObject({ state: "abandoned" });
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
    // The worker of before the replay, late: refused (its token is older than the reset), and
    // above all it leaves no settled hint behind.
    expect(await lease.settle(before.token)).toBe(false);
    expect(await lease.claim(ref)).toMatchObject({ kind: "granted", takeover: false });
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

  it("writes two rows on the hot path: the claim sets the alarm, the settle deletes it, and no key is put", async () => {
    const ref = { source: "lease", id: "hot-path" };
    const lease = leaseFor(env, ref);
    const writes = await countWrites(lease);
    const claim = await lease.claim(ref);
    if (claim.kind !== "granted") throw new Error("expected a grant");
    expect(writes).toEqual({ put: 0, setAlarm: 1, deleteAlarm: 0, delete: 0, deleteAll: 0 });
    // The lease is the alarm alone while it is held.
    expect((await stored(lease)).keys).toEqual([]);
    expect(await lease.settle(claim.token)).toBe(true);
    expect(writes).toEqual({ put: 0, setAlarm: 1, deleteAlarm: 1, delete: 0, deleteAll: 0 });
    expect(await stored(lease)).toEqual({ keys: [], alarm: null });
  });

  it("renews a held lease with one write, the alarm", async () => {
    const ref = { source: "lease", id: "renew-one-write" };
    const lease = leaseFor(env, ref);
    const claim = await lease.claim(ref);
    if (claim.kind !== "granted") throw new Error("expected a grant");
    const writes = await countWrites(lease);
    expect(await lease.renew(claim.token)).toBe(true);
    expect(writes).toEqual({ put: 0, setAlarm: 1, deleteAlarm: 0, delete: 0, deleteAll: 0 });
  });
});

/** A worker holding `stale`, a token that is no longer the lease, can neither renew, release nor settle it. */
async function expectRefused(lease: DurableObjectStub<DeliveryLease>, stale: number): Promise<void> {
  expect(await lease.renew(stale)).toBe(false);
  expect(await lease.release(stale, Date.now())).toBe(false);
  expect(await lease.settle(stale)).toBe(false);
}

describe("DeliveryLease after an eviction (its memory lost, its storage and alarm kept)", () => {
  it("answers busy while the lost lease's alarm is ahead; the alarm requeues the delivery named by the object, and the next claim takes over", async () => {
    const ref = { source: "lease", id: "evicted-holder" };
    const first = await leaseFor(env, ref).claim(ref);
    if (first.kind !== "granted") throw new Error("expected a grant");
    let lease = await evict(ref);
    // Only the alarm survived: no key says which delivery this is, or who holds it.
    const left = await stored(lease);
    expect(left.keys).toEqual([]);
    expect(left.alarm).not.toBeNull();
    // Somebody may be at work under the lost token: busy, until the alarm.
    expect(await lease.claim(ref)).toEqual({ kind: "busy", leasedUntilMs: left.alarm });
    // Evicted again, so that the alarm meets an instance no claim has named the delivery to.
    lease = await evict(ref);
    const queue = faultyQueue(null);
    await rebindObject(lease, { DELIVERIES: queue.queue });
    expect(await expireLease(lease)).toBe(true);
    expect(queue.sent).toEqual([ref]);
    // It keeps watching until somebody settles the delivery.
    expect((await stored(lease)).alarm).not.toBeNull();
    const next = await lease.claim(ref);
    expect(next).toMatchObject({ kind: "granted", takeover: true });
    if (next.kind !== "granted") return;
    expect(next.token).toBeGreaterThan(first.token);
    // The holder of the lost token is refused now.
    await expectRefused(lease, first.token);
    expect(await lease.settle(next.token)).toBe(true);
    expect(await stored(lease)).toEqual({ keys: [], alarm: null });
  });

  it("takes over after an eviction even when the alarm fired before it, and the instance is evicted again before the requeued claim", async () => {
    const ref = { source: "lease", id: "evicted-after-alarm" };
    const lease = leaseFor(env, ref);
    const first = await lease.claim(ref);
    if (first.kind !== "granted") throw new Error("expected a grant");
    await rebindObject(lease, { DELIVERIES: faultyQueue(null).queue });
    expect(await expireLease(lease)).toBe(true);
    const fresh = await evict(ref);
    const next = await fresh.claim(ref);
    expect(next).toMatchObject({ kind: "granted", takeover: true });
    if (next.kind === "granted") expect(next.token).toBeGreaterThan(first.token);
  });

  it("keeps watching a lost lease through a bad configuration, and requeues it once the configuration is fixed", async () => {
    const ref = { source: "lease", id: "evicted-bad-config" };
    const first = await leaseFor(env, ref).claim(ref);
    if (first.kind !== "granted") throw new Error("expected a grant");
    const lease = await evict(ref);
    const queue = faultyQueue(null);
    await rebindObject(lease, { DELIVERIES: queue.queue, LEASE_SECONDS: "not a number" });
    expect(await expireLease(lease)).toBe(true);
    expect(queue.sent).toEqual([]);
    expect((await stored(lease)).alarm).not.toBeNull();
    await rebindObject(lease, { LEASE_SECONDS: "60" });
    expect(await expireLease(lease)).toBe(true);
    expect(queue.sent).toEqual([ref]);
    const next = await lease.claim(ref);
    expect(next).toMatchObject({ kind: "granted", takeover: true });
    if (next.kind === "granted") expect(next.token).toBeGreaterThan(first.token);
  });

  it("grants a released delivery's retry at once: the release is stored, so the safety alarm is not taken for a lease still held", async () => {
    const ref = { source: "lease", id: "evicted-released" };
    const lease = leaseFor(env, ref);
    const claim = await lease.claim(ref);
    if (claim.kind !== "granted") throw new Error("expected a grant");
    const writes = await countWrites(lease);
    expect(await lease.release(claim.token, Date.now() + 2_000)).toBe(true);
    expect(writes).toEqual({ put: 1, setAlarm: 1, deleteAlarm: 0, delete: 0, deleteAll: 0 });
    const fresh = await evict(ref);
    expect((await stored(fresh)).alarm).not.toBeNull();
    const retry = await fresh.claim(ref);
    expect(retry).toMatchObject({ kind: "granted", takeover: false });
    if (retry.kind !== "granted") return;
    expect(retry.token).toBeGreaterThan(claim.token);
    // The stale token is refused, and the retry's settle leaves nothing (key and alarm).
    expect(await fresh.settle(claim.token)).toBe(false);
    expect(await fresh.settle(retry.token)).toBe(true);
    expect(await stored(fresh)).toEqual({ keys: [], alarm: null });
  });

  it("lets the holder renew after an eviction (with one write, the alarm), and still refuses other tokens", async () => {
    const ref = { source: "lease", id: "evicted-renew" };
    const claim = await leaseFor(env, ref).claim(ref);
    if (claim.kind !== "granted") throw new Error("expected a grant");
    const lease = await evict(ref);
    const alarmBefore = (await stored(lease)).alarm!;
    const writes = await countWrites(lease);
    const realNow = Date.now.bind(Date);
    const clock = vi.spyOn(Date, "now").mockImplementation(() => realNow() + 30_000);
    try {
      expect(await lease.renew(claim.token)).toBe(true);
    } finally {
      clock.mockRestore();
    }
    expect(writes).toEqual({ put: 0, setAlarm: 1, deleteAlarm: 0, delete: 0, deleteAll: 0 });
    expect((await stored(lease)).alarm! - alarmBefore).toBeGreaterThanOrEqual(30_000);
    // The adopted lease is the holder's: any other token is refused, and the lease is held.
    expect(await lease.renew(claim.token - 1)).toBe(false);
    expect(await lease.renew(claim.token + 1)).toBe(false);
    expect(await lease.release(claim.token + 1, Date.now())).toBe(false);
    expect(await lease.settle(claim.token + 1)).toBe(false);
    expect(await lease.claim(ref)).toMatchObject({ kind: "busy" });
    expect(await lease.settle(claim.token)).toBe(true);
    expect(await stored(lease)).toEqual({ keys: [], alarm: null });
  });

  it("keeps the token of a holder that renewed an orphaned lease, across a second eviction", async () => {
    const ref = { source: "lease", id: "evicted-floor-renew" };
    const claim = await leaseFor(env, ref).claim(ref);
    if (claim.kind !== "granted") throw new Error("expected a grant");
    let lease = await evict(ref);
    await rebindObject(lease, { DELIVERIES: faultyQueue(null).queue });
    // The alarm meets a fresh instance: it stores the lease abandoned, under a floor for the tokens.
    expect(await expireLease(lease)).toBe(true);
    // The holder, still at work, renews: the lease is its own again, its token no longer unknown.
    expect(await lease.renew(claim.token)).toBe(true);
    lease = await evict(ref);
    expect(await lease.renew(claim.token + 1)).toBe(false);
    expect(await lease.renew(claim.token)).toBe(true);
    expect(await lease.settle(claim.token)).toBe(true);
    expect(await stored(lease)).toEqual({ keys: [], alarm: null });
  });

  it("refuses the holder that was taken over, after an eviction too: a takeover stores the new token", async () => {
    const ref = { source: "lease", id: "evicted-takeover" };
    const lease = leaseFor(env, ref);
    const stale = await lease.claim(ref);
    await rebindObject(lease, { DELIVERIES: faultyQueue(null).queue });
    expect(await expireLease(lease)).toBe(true);
    const current = await lease.claim(ref);
    if (stale.kind !== "granted" || current.kind !== "granted") throw new Error("expected grants");
    expect(current.takeover).toBe(true);
    const fresh = await evict(ref);
    await expectRefused(fresh, stale.token);
    expect(await fresh.renew(current.token)).toBe(true);
    expect(await fresh.settle(current.token)).toBe(true);
    expect(await stored(fresh)).toEqual({ keys: [], alarm: null });
  });

  it("refuses a worker of before a replay's reset, after an eviction too", async () => {
    const ref = { source: "lease", id: "evicted-reset" };
    const lease = leaseFor(env, ref);
    const before = await lease.claim(ref);
    await lease.reset();
    const after = await lease.claim(ref);
    if (before.kind !== "granted" || after.kind !== "granted") throw new Error("expected grants");
    expect(after.takeover).toBe(false);
    const fresh = await evict(ref);
    expect(await fresh.renew(before.token)).toBe(false);
    expect(await fresh.settle(before.token)).toBe(false);
    expect(await fresh.claim(ref)).toMatchObject({ kind: "busy" });
    expect(await fresh.settle(after.token)).toBe(true);
    expect(await stored(fresh)).toEqual({ keys: [], alarm: null });
  });

  it("lets the holder settle after an eviction with one write, leaving no key and no alarm", async () => {
    const ref = { source: "lease", id: "evicted-settle" };
    const claim = await leaseFor(env, ref).claim(ref);
    if (claim.kind !== "granted") throw new Error("expected a grant");
    const lease = await evict(ref);
    const writes = await countWrites(lease);
    expect(await lease.settle(claim.token)).toBe(true);
    expect(writes).toEqual({ put: 0, setAlarm: 0, deleteAlarm: 1, delete: 0, deleteAll: 0 });
    expect(await stored(lease)).toEqual({ keys: [], alarm: null });
    // A duplicate message right after: the hint (this instance's) turns it away.
    expect(await lease.claim(ref)).toEqual({ kind: "settled" });
  });

  it("stores the delivery with the lease when the object's name does not carry it, and the alarm requeues it", async () => {
    // Names over 1,024 bytes are not passed through to ctx.id.name.
    const ref = { source: "lease", id: `long-${"x".repeat(1_100)}` };
    let lease = leaseFor(env, ref);
    expect(await runInDurableObject(lease, (_instance, ctx) => ctx.id.name)).toBeUndefined();
    const claim = await lease.claim(ref);
    if (claim.kind !== "granted") throw new Error("expected a grant");
    lease = await evict(ref);
    const queue = faultyQueue(null);
    await rebindObject(lease, { DELIVERIES: queue.queue });
    expect(await expireLease(lease)).toBe(true);
    expect(queue.sent).toEqual([ref]);
    const next = await lease.claim(ref);
    expect(next).toMatchObject({ kind: "granted", takeover: true });
    if (next.kind === "granted") expect(await lease.settle(next.token)).toBe(true);
    expect(await stored(lease)).toEqual({ keys: [], alarm: null });
  });

  it("reads a lease stored by the previous version (the whole state under `lease`), and clears it at settle", async () => {
    const ref = { source: "lease", id: "legacy" };
    let lease = leaseFor(env, ref);
    const token = Date.now() - 5_000;
    await runInDurableObject(lease, async (_instance, ctx) => {
      await ctx.storage.put("lease", { ref, token, heldUntilMs: Date.now() + 60_000, abandoned: false });
      await ctx.storage.setAlarm(Date.now() + 60_000);
    });
    lease = await evict(ref);
    expect(await lease.claim(ref)).toMatchObject({ kind: "busy" });
    expect(await lease.renew(token - 1)).toBe(false);
    expect(await lease.renew(token)).toBe(true);
    expect(await lease.settle(token)).toBe(true);
    expect(await stored(lease)).toEqual({ keys: [], alarm: null });
  });
});

describe("a settle of a run the store records finished keeps the alarm instead of deleting it", () => {
  const quiet = defineHandlers({ finished: { "*": () => undefined } });
  const refuses = defineHandlers({
    finished: {
      "*": () => {
        throw new PermanentError("refused");
      },
    },
  });

  it("writes one row per delivery on the hot path: the claim's alarm; it fires, finds the lease settled, and does nothing", async () => {
    const ref = { source: "finished", id: "hot-path" };
    await storeDelivery(ref);
    const lease = leaseFor(env, ref);
    const writes = await countWrites(lease);
    const queue = faultyQueue(null);
    await rebindObject(lease, { DELIVERIES: queue.queue });
    expect((await consume([ref], quiet)).outcomes[0]!.reason).toBe("done");
    expect(writes).toEqual({ put: 0, setAlarm: 1, deleteAlarm: 0, delete: 0, deleteAll: 0 });
    expect((await stored(lease)).alarm).not.toBeNull();
    expect(await fireAlarm(lease)).toBe(true);
    expect(writes).toEqual({ put: 0, setAlarm: 1, deleteAlarm: 0, delete: 0, deleteAll: 0 });
    expect(await stored(lease)).toEqual({ keys: [], alarm: null });
    expect(queue.sent).toEqual([]);
  });

  it("evicted before its alarm: the fresh instance asks the store, finds the delivery done, writes nothing and requeues nothing", async () => {
    const ref = { source: "finished", id: "evicted" };
    await storeDelivery(ref);
    expect((await consume([ref], quiet)).outcomes[0]!.reason).toBe("done");
    const lease = await evict(ref);
    const writes = await countWrites(lease);
    const queue = faultyQueue(null);
    await rebindObject(lease, { DELIVERIES: queue.queue });
    expect(await fireAlarm(lease)).toBe(true);
    expect(queue.sent).toEqual([]);
    expect(writes).toEqual({ put: 0, setAlarm: 0, deleteAlarm: 0, delete: 0, deleteAll: 0 });
    expect(await stored(lease)).toEqual({ keys: [], alarm: null });
    // A replay's claim after it is granted at once, no takeover.
    expect(await lease.claim(ref)).toMatchObject({ kind: "granted", takeover: false });
  });

  it("evicted, and the store cannot answer: the alarm does what it always did, the delivery goes back on the queue", async () => {
    const ref = { source: "finished", id: "store-down" };
    await storeDelivery(ref);
    expect((await consume([ref], quiet)).outcomes[0]!.reason).toBe("done");
    const lease = await evict(ref);
    const queue = faultyQueue(null);
    await rebindObject(lease, { DELIVERIES: queue.queue, ...unreachableStore().bindings });
    expect(await fireAlarm(lease)).toBe(true);
    expect(queue.sent).toEqual([ref]);
  });

  it("a failed delivery whose dead letter could not be sent: evicted, its alarm still brings it back to send it", async () => {
    const ref = { source: "finished", id: "failed-unsent" };
    await storeDelivery(ref);
    const deadLetters = faultyQueue(null, () => "throw");
    expect((await consume([ref], refuses, { DEAD_LETTERS: deadLetters.queue })).outcomes[0]!.reason).toBe("failed");
    const lease = await evict(ref);
    const queue = faultyQueue(null);
    await rebindObject(lease, { DELIVERIES: queue.queue });
    expect(await fireAlarm(lease)).toBe(true);
    expect(queue.sent).toEqual([ref]);
  });

  it("a failed delivery's settle deletes the alarm (its dead letter was sent): nothing is left to fire", async () => {
    const ref = { source: "finished", id: "failed-sent" };
    await storeDelivery(ref);
    const lease = leaseFor(env, ref);
    const writes = await countWrites(lease);
    expect((await consume([ref], refuses, { DEAD_LETTERS: faultyQueue(null).queue })).outcomes[0]!.reason).toBe("failed");
    expect(writes).toMatchObject({ setAlarm: 1, deleteAlarm: 1 });
    expect(await stored(lease)).toEqual({ keys: [], alarm: null });
  });

  it("a run whose row is not finished (a fanned-out delivery) still has its alarm deleted by the settle", async () => {
    const ref = { source: "finished-fan", id: "fanned" };
    await storeDelivery(ref);
    const fan = defineHandlers({ "finished-fan": subscribers({ one: { on: { "*": () => undefined } }, two: { on: { "*": () => undefined } } }) });
    const lease = leaseFor(env, ref);
    const writes = await countWrites(lease);
    expect((await consume([ref], fan, { DELIVERIES: capturingQueue().producer })).outcomes[0]!.reason).toBe("fanned");
    expect(writes).toMatchObject({ setAlarm: 1, deleteAlarm: 1 });
    expect(await stored(lease)).toEqual({ keys: [], alarm: null });
  });
});
