/**
 * The lease's rules as tables (src/processing/lease/decisions.ts): one table per operation, each row
 * a situation and what the lease decides in it: its answer, the storage writes, and what the
 * instance knows after. No runtime, no clock: `NOW` is any instant. The object that applies these
 * decisions is tested end to end in test/processing/lease/lease.test.ts.
 */
import { describe, expect, it } from "vitest";
import { CONFIG_RETRY_MS, decideAlarm, decideClaim, decideRelease, decideRenew, decideReset, decideSettle, loadLease, type Lease, type LeaseState, type Naming } from "../../../src/processing/lease/decisions";
import { fromStorage, refFromName, type StoredLease } from "../../../src/processing/lease/stored";
import { leaseName } from "../../../src/processing/messages";

const NOW = 1_800_000_000_000;
const LEASE_MS = 60_000;
/** The token of the lease's holder: issued from the clock, a while ago. */
const T = NOW - 10_000;
const REF = { source: "stripe", id: "evt_1" };
const NAMED: Naming = { namedRef: REF, claimedRef: REF };
/** An object whose name does not carry its delivery (over 1,024 bytes); the claim said which. */
const UNNAMED: Naming = { namedRef: null, claimedRef: REF };
const UNKNOWN: Naming = { namedRef: null, claimedRef: null };

function inMemory(lease: Lease | null, extra: Partial<LeaseState> = {}): LeaseState {
  return { lease, stored: null, lastToken: lease?.token ?? 0, settledAtMs: null, ...extra };
}

/** The situations, as an instance knows them. */
const fresh = loadLease(null, null);
const held = inMemory({ token: T, heldUntilMs: NOW + 30_000, abandoned: false });
const heldPassed = inMemory({ token: T, heldUntilMs: NOW - 1, abandoned: false });
const orphanAhead = loadLease(null, NOW + 30_000);
const orphanPassed = loadLease(null, NOW - 1);
const abandoned = loadLease({ token: T, state: "abandoned" }, NOW + 60_000);
const abandonedPassed = loadLease({ token: T, state: "abandoned" }, null);
const released = loadLease({ token: T, state: "released" }, NOW + 90_000);
const heldKey = loadLease({ token: T, state: "held" }, NOW + 30_000);
const floor = (token: number) => loadLease({ token, state: "abandoned", floor: true }, NOW + 60_000);
const settledRecently = inMemory(null, { lastToken: T, settledAtMs: NOW - 1_000 });
const settledLeaseAgo = inMemory(null, { lastToken: T, settledAtMs: NOW - LEASE_MS });
const afterReset = decideReset(held, NAMED, NOW - 5_000).next;

describe("loadLease: what a fresh instance makes of its stored key and alarm", () => {
  const rows: [string, StoredLease | null, number | null, Lease | null, number][] = [
    ["no key, no alarm: never claimed, or settled", null, null, null, 0],
    ["no key, an alarm: an evicted hot-path lease, its token unknown", null, NOW + 5, { token: null, heldUntilMs: NOW + 5, abandoned: false }, 0],
    ["a held key: held until the alarm", { token: T, state: "held" }, NOW + 5, { token: T, heldUntilMs: NOW + 5, abandoned: false }, T],
    ["a held key and no alarm (the alarm is running): ended", { token: T, state: "held" }, null, { token: T, heldUntilMs: 0, abandoned: false }, T],
    ["a released key: nobody holds it, whatever the safety alarm", { token: T, state: "released" }, NOW + 5, { token: T, heldUntilMs: null, abandoned: false }, T],
    ["an abandoned key: the next claim takes over", { token: T, state: "abandoned" }, NOW + 5, { token: T, heldUntilMs: NOW + 5, abandoned: true }, T],
    ["a floor: no holder's token, but tokens go past it", { token: T, state: "abandoned", floor: true }, NOW + 5, { token: null, heldUntilMs: NOW + 5, abandoned: true }, T],
  ];
  it.each(rows)("%s", (_situation, stored, alarmAtMs, lease, lastToken) => {
    expect(loadLease(stored, alarmAtMs)).toEqual({ lease, stored, lastToken, settledAtMs: null });
  });
});

describe("claim", () => {
  const granted = (token: number, takeover: boolean, previousToken: number) => ({ kind: "granted", token, takeover, previousToken });
  const key = (token: number, extra: Partial<StoredLease> = {}): StoredLease => ({ token, state: "held", ...extra });
  const rows: [string, LeaseState, Naming, unknown, object][] = [
    ["never claimed: granted, the alarm is the only write", fresh, NAMED, granted(NOW, false, 0), { alarmAtMs: NOW + LEASE_MS }],
    ["never claimed, the name carries no delivery: the key keeps it", fresh, UNNAMED, granted(NOW, false, 0), { alarmAtMs: NOW + LEASE_MS, key: key(NOW, { ref: REF }) }],
    ["held, its lease ahead: busy until its end", held, NAMED, { kind: "busy", leasedUntilMs: NOW + 30_000 }, {}],
    ["evicted, no key, the alarm ahead: busy, its holder may be at work", orphanAhead, NAMED, { kind: "busy", leasedUntilMs: NOW + 30_000 }, {}],
    ["held, its lease passed before the alarm ran: a takeover, the new token stored", heldPassed, NAMED, granted(NOW, true, T), { alarmAtMs: NOW + LEASE_MS, key: key(NOW) }],
    ["evicted, no key, the alarm passed: a takeover of an unknown token", orphanPassed, NAMED, granted(NOW, true, 0), { alarmAtMs: NOW + LEASE_MS, key: key(NOW) }],
    ["abandoned by the alarm: a takeover, even with the alarm ahead", abandoned, NAMED, granted(NOW, true, T), { alarmAtMs: NOW + LEASE_MS, key: key(NOW) }],
    ["abandoned under a floor above the clock: the token goes past the floor", floor(NOW + 1_000), NAMED, granted(NOW + 1_001, true, 0), { alarmAtMs: NOW + LEASE_MS, key: key(NOW + 1_001) }],
    ["released (a retry is due): granted at once, no takeover, the key rewritten", released, NAMED, granted(NOW, false, 0), { alarmAtMs: NOW + LEASE_MS, key: key(NOW) }],
    ["settled within a lease: settled", settledRecently, NAMED, { kind: "settled" }, {}],
    ["settled a lease ago or more: granted, the D1 row judges", settledLeaseAgo, NAMED, granted(NOW, false, 0), { alarmAtMs: NOW + LEASE_MS }],
    ["reset by a replay: granted, no takeover, above the reset's token", afterReset, NAMED, granted(NOW, false, 0), { alarmAtMs: NOW + LEASE_MS, key: key(NOW) }],
    ["the clock behind the last token: the token still grows", inMemory(null, { lastToken: NOW + 10 }), NAMED, granted(NOW + 11, false, 0), { alarmAtMs: NOW + LEASE_MS }],
  ];
  it.each(rows)("%s", (_situation, state, naming, result, writes) => {
    const decision = decideClaim(state, naming, NOW, LEASE_MS);
    expect(decision.result).toEqual(result);
    expect(decision.writes).toEqual(writes);
    if (decision.result.kind !== "granted") return expect(decision.next).toBe(state);
    const { token } = decision.result;
    expect(token).toBeGreaterThan(state.lastToken);
    expect(decision.next).toEqual({ lease: { token, heldUntilMs: NOW + LEASE_MS, abandoned: false }, stored: "key" in writes ? writes.key : state.stored, lastToken: token, settledAtMs: null });
  });
});

describe("renew", () => {
  const renewed = (token: number, key?: StoredLease) => ({ alarmAtMs: NOW + LEASE_MS, ...(key ? { key } : {}) });
  const rows: [string, LeaseState, Naming, number, number | null, boolean | null, object][] = [
    ["nothing held (never claimed, or settled): refused", fresh, NAMED, T, LEASE_MS, false, {}],
    ["released: refused, nobody holds it", released, NAMED, T, LEASE_MS, false, {}],
    ["the holder's token: extended, the alarm is the only write", held, NAMED, T, LEASE_MS, true, renewed(T)],
    ["the holder's token, its lease passed but nobody took over: extended", heldPassed, NAMED, T, LEASE_MS, true, renewed(T)],
    ["a stale token: refused", held, NAMED, T - 1, LEASE_MS, false, {}],
    ["evicted, no key: the holder adopts the lease, one write", orphanAhead, NAMED, T, LEASE_MS, true, renewed(T)],
    ["a held key (after a takeover): extended, the key left as it is", heldKey, NAMED, T, LEASE_MS, true, renewed(T)],
    ["a held key, another token: refused", heldKey, NAMED, T + 1, LEASE_MS, false, {}],
    ["abandoned, the holder still at work: held again, the key rewritten", abandoned, NAMED, T, LEASE_MS, true, renewed(T, { token: T, state: "held" })],
    ["a floor: the holder's own token replaces it", floor(NOW - 1_000), NAMED, T, LEASE_MS, true, renewed(T, { token: T, state: "held" })],
    ["a held key that is a floor: the holder's own token replaces it", loadLease({ token: NOW - 1_000, state: "held", floor: true }, NOW + 30_000), NAMED, T, LEASE_MS, true, renewed(T, { token: T, state: "held" })],
    ["abandoned, unnamed: the rewritten key keeps the delivery", loadLease({ token: T, state: "abandoned", ref: REF }, NOW), UNKNOWN, T, LEASE_MS, true, renewed(T, { token: T, state: "held", ref: REF })],
    ["an invalid configuration, the holder's token: the call fails", held, NAMED, T, null, null, {}],
    ["an invalid configuration, a stale token: still refused", held, NAMED, T - 1, null, false, {}],
  ];
  it.each(rows)("%s", (_situation, state, naming, token, leaseMs, result, writes) => {
    const decision = decideRenew(state, naming, token, NOW, leaseMs);
    if (result === null) return expect(decision).toBeNull();
    expect(decision?.result).toBe(result);
    expect(decision?.writes).toEqual(writes);
    if (!result) return expect(decision?.next).toBe(state);
    expect(decision?.next.lease).toEqual({ token, heldUntilMs: NOW + LEASE_MS, abandoned: false });
  });
});

describe("release", () => {
  const RETRY_AT = NOW + 20_000;
  const releasedWrites = (token: number, extra: Partial<StoredLease> = {}) => ({ alarmAtMs: RETRY_AT + LEASE_MS, key: { token, state: "released", ...extra } });
  const rows: [string, LeaseState, Naming, number, number | null, boolean | null, object][] = [
    ["nothing held: refused", fresh, NAMED, T, LEASE_MS, false, {}],
    ["the holder's token: released, stored, a safety alarm one lease after the retry", held, NAMED, T, LEASE_MS, true, releasedWrites(T)],
    ["a stale token: refused", held, NAMED, T - 1, LEASE_MS, false, {}],
    ["a token after a takeover's, refused too", heldKey, NAMED, T + 1, LEASE_MS, false, {}],
    ["evicted, no key: the holder's release is taken", orphanAhead, NAMED, T, LEASE_MS, true, releasedWrites(T)],
    ["released already, the same token again: released again", released, NAMED, T, LEASE_MS, true, releasedWrites(T)],
    ["unnamed: the key keeps the delivery the claim named", held, UNNAMED, T, LEASE_MS, true, releasedWrites(T, { ref: REF })],
    ["an invalid configuration, the holder's token: the call fails", held, NAMED, T, null, null, {}],
    ["an invalid configuration, a stale token: still refused", held, NAMED, T - 1, null, false, {}],
  ];
  it.each(rows)("%s", (_situation, state, naming, token, leaseMs, result, writes) => {
    const decision = decideRelease(state, naming, token, RETRY_AT, leaseMs);
    if (result === null) return expect(decision).toBeNull();
    expect(decision?.result).toBe(result);
    expect(decision?.writes).toEqual(writes);
    if (!result) return expect(decision?.next).toBe(state);
    expect(decision?.next).toMatchObject({ lease: { token, heldUntilMs: null, abandoned: false }, stored: "key" in writes ? writes.key : null });
  });
});

describe("settle", () => {
  const rows: [string, LeaseState, number, boolean, object, boolean][] = [
    ["nothing held (a repeated settle, or never claimed): done, no write, no settled hint", fresh, T, true, {}, false],
    ["the holder's token on the hot path: one write, the alarm deleted", held, T, true, { alarmAtMs: null }, true],
    ["a stale token: refused", held, T - 1, false, {}, false],
    ["a key was stored (released, taken over): everything deleted at once", released, T, true, { clear: true }, true],
    ["evicted, no key: the holder settles, one write", orphanAhead, T, true, { alarmAtMs: null }, true],
    ["a worker of before a replay's reset: refused", afterReset, T, false, {}, false],
  ];
  it.each(rows)("%s", (_situation, state, token, result, writes, forgotten) => {
    const decision = decideSettle(state, token, NOW);
    expect(decision.result).toBe(result);
    expect(decision.writes).toEqual(writes);
    if (!forgotten) return expect(decision.next).toBe(state);
    expect(decision.next).toEqual({ lease: null, stored: null, lastToken: state.lastToken, settledAtMs: NOW });
  });
});

describe("settle of a run the store records finished (done or failed)", () => {
  const rows: [string, LeaseState, number, boolean, object][] = [
    ["the hot path: no write, the alarm stays to find it settled", held, T, true, {}],
    ["evicted, no key: no write either", orphanAhead, T, true, {}],
    ["a key was stored: everything deleted at once, as any settle", released, T, true, { clear: true }],
    ["a stale token: refused", held, T - 1, false, {}],
  ];
  it.each(rows)("%s", (_situation, state, token, result, writes) => {
    const decision = decideSettle(state, token, NOW, true);
    expect(decision.result).toBe(result);
    expect(decision.writes).toEqual(writes);
    if (!result) return expect(decision.next).toBe(state);
    expect(decision.next).toEqual({ lease: null, stored: null, lastToken: state.lastToken, settledAtMs: NOW });
    // The alarm it leaves finds nothing to watch on this instance.
    expect(decideAlarm(decision.next, NAMED, false, NOW + LEASE_MS, LEASE_MS, 0).step).toEqual({ kind: "idle" });
  });
});

describe("reset", () => {
  const rows: [string, LeaseState, Naming, StoredLease][] = [
    ["never claimed: a released key at the clock, the alarm deleted", fresh, NAMED, { token: NOW, state: "released" }],
    ["held, the last token above the clock: the floor keeps it", inMemory({ token: NOW + 5, heldUntilMs: NOW + 60_000, abandoned: false }), NAMED, { token: NOW + 5, state: "released" }],
    ["settled just now: the settled hint goes too", settledRecently, NAMED, { token: NOW, state: "released" }],
    ["unnamed: the key keeps the delivery", held, UNNAMED, { token: NOW, state: "released", ref: REF }],
  ];
  it.each(rows)("%s", (_situation, state, naming, key) => {
    const decision = decideReset(state, naming, NOW);
    expect(decision.writes).toEqual({ key, alarmAtMs: null });
    expect(decision.next).toEqual({ lease: { token: key.token, heldUntilMs: null, abandoned: false }, stored: key, lastToken: key.token, settledAtMs: null });
  });
});

describe("alarm", () => {
  const DELAY = 3;
  const requeue = { kind: "requeue", ref: REF, delaySeconds: DELAY, alarmAtMs: NOW + LEASE_MS + DELAY * 1000 };
  const rows: [string, LeaseState, Naming, boolean, number | null, StoredLease | undefined, object, Lease | null][] = [
    ["settled or reset by this instance: nothing to watch", fresh, NAMED, false, LEASE_MS, undefined, { kind: "idle" }, null],
    ["a fresh instance, no key (the hot path's alarm): abandoned under a floor, requeued", fresh, NAMED, true, LEASE_MS, { token: NOW, state: "abandoned", floor: true }, requeue, { token: null, heldUntilMs: 0, abandoned: true }],
    ["a fresh instance, no key, an invalid configuration: kept in memory, tried again in a minute", fresh, NAMED, true, null, undefined, { kind: "config_invalid", alarmAtMs: NOW + CONFIG_RETRY_MS }, { token: null, heldUntilMs: 0, abandoned: false }],
    ["a held lease passed, an invalid configuration: tried again in a minute", heldPassed, NAMED, false, null, undefined, { kind: "config_invalid", alarmAtMs: NOW + CONFIG_RETRY_MS }, heldPassed.lease],
    ["the lease ahead (renewed or granted since): wait for its end", held, NAMED, false, LEASE_MS, undefined, { kind: "wait", alarmAtMs: NOW + 30_000 }, held.lease],
    ["the holder silent a whole lease: abandoned, its token stored, requeued", heldPassed, NAMED, false, LEASE_MS, { token: T, state: "abandoned" }, requeue, { token: T, heldUntilMs: NOW - 1, abandoned: true }],
    ["abandoned already: requeued again, nothing stored", abandonedPassed, NAMED, true, LEASE_MS, undefined, requeue, abandonedPassed.lease],
    ["released, and the retry never came: requeued, nothing stored", loadLease({ token: T, state: "released" }, null), NAMED, true, LEASE_MS, undefined, requeue, { token: T, heldUntilMs: null, abandoned: false }],
    ["unnamed, the delivery stored with the lease: it is requeued", loadLease({ token: T, state: "held", ref: REF }, null), UNKNOWN, true, LEASE_MS, { token: T, state: "abandoned", ref: REF }, requeue, { token: T, heldUntilMs: 0, abandoned: true }],
    ["unnamed, no delivery known at all: abandoned, but nothing to requeue", fresh, UNKNOWN, true, LEASE_MS, { token: NOW, state: "abandoned", floor: true }, { kind: "unknown_delivery" }, { token: null, heldUntilMs: 0, abandoned: true }],
  ];
  it.each(rows)("%s", (_situation, state, naming, fresh, leaseMs, key, step, lease) => {
    const decision = decideAlarm(state, naming, fresh, NOW, leaseMs, DELAY);
    expect(decision.key).toEqual(key);
    expect(decision.step).toEqual(step);
    expect(decision.next.lease).toEqual(lease);
    expect(decision.next.stored).toEqual(key ?? state.stored);
    if (key) expect(decision.next.lastToken).toBe(Math.max(state.lastToken, key.token));
  });
});

describe("the stored form", () => {
  const legacy = { ref: REF, token: T };
  const rows: [string, Parameters<typeof fromStorage>[0], StoredLease | null][] = [
    ["no key", undefined, null],
    ["this version's key, as it is", { token: T, state: "released" }, { token: T, state: "released" }],
    ["a legacy key held", { ...legacy, heldUntilMs: NOW, abandoned: false }, { token: T, state: "held", ref: REF }],
    ["a legacy key released", { ...legacy, heldUntilMs: null, abandoned: false }, { token: T, state: "released", ref: REF }],
    ["a legacy key abandoned", { ...legacy, heldUntilMs: NOW, abandoned: true }, { token: T, state: "abandoned", ref: REF }],
  ];
  it.each(rows)("reads %s", (_situation, value, stored) => {
    expect(fromStorage(value)).toEqual(stored);
  });

  const names: [string, string | undefined, unknown][] = [
    ["the name a worker reaches it by", leaseName(REF), REF],
    ["no name (over 1,024 bytes)", undefined, null],
    ["not JSON", "stripe/evt_1", null],
    ["not a pair", JSON.stringify(["stripe"]), null],
    ["a pair that is no delivery", JSON.stringify(["", "evt_1"]), null],
    ["the same pair written another way", `[ "stripe", "evt_1" ]`, null],
  ];
  it.each(names)("names its delivery from %s", (_situation, name, ref) => {
    expect(refFromName(name)).toEqual(ref);
  });
});
