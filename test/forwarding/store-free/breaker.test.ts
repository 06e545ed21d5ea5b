// The breaker's decisions (src/forwarding/breaker.ts) and the backlog's order (arrival.ts), table-driven.
import { describe, expect, it } from "vitest";
import { admit, CLOSED, openPeriodMs, record, type BreakerOutcome, type BreakerState } from "../../../src/forwarding/breaker";
import { ARRIVAL_GRACE_MS, MAX_WAITING, olderWaiting, prune, receivedAtMs, register, type Backlog } from "../../../src/forwarding/arrival";

const SETTINGS = { failures: 3, openSeconds: 10 };
const closed = (failures = 0): BreakerState => ({ ...CLOSED, failures });
const open = (reopenAtMs: number, openings = 1): BreakerState => ({ status: "open", sinceMs: 0, failures: 3, openings, reopenAtMs, probe: null });
const halfOpen = (probe: string, untilMs: number, openings = 1): BreakerState => ({ status: "half-open", sinceMs: 500, failures: 3, openings, reopenAtMs: null, probe: { id: probe, untilMs } });

describe("admit", () => {
  it.each<[string, BreakerState, number, string, object]>([
    ["closed: goes", closed(2), 1_000, "r", { go: true, probe: false }],
    ["open, not due: waits until the probe time", open(5_000), 1_000, "r", { go: false, untilMs: 5_000 }],
    ["open and due: goes as the probe", open(5_000), 5_000, "r", { go: true, probe: true }],
    ["half-open, probe in flight: another waits (at most 5 s)", halfOpen("p", 60_000), 1_000, "r", { go: false, untilMs: 6_000 }],
    ["half-open, probe in flight ending soon: waits until then", halfOpen("p", 3_000), 1_000, "r", { go: false, untilMs: 3_000 }],
    ["half-open, the probe asks again: goes", halfOpen("p", 60_000), 1_000, "p", { go: true, probe: true }],
    ["half-open, the probe's turn passed (its worker died): another probes", halfOpen("p", 1_000), 1_000, "r", { go: true, probe: true }],
  ])("%s", (_name, state, nowMs, id, admission) => {
    expect(admit(state, nowMs, id, 40_000).admission).toEqual(admission);
  });

  it("makes the probe's turn last holdMs, from the first probe's start", () => {
    expect(admit(open(5_000), 5_000, "r", 40_000).state).toMatchObject({ status: "half-open", sinceMs: 5_000, probe: { id: "r", untilMs: 45_000 } });
    expect(admit(halfOpen("p", 1_000), 2_000, "r", 40_000).state).toMatchObject({ status: "half-open", sinceMs: 500, probe: { id: "r", untilMs: 42_000 } });
  });

  it("changes nothing while closed (no write on the hot path)", () => {
    const state = closed(1);
    expect(admit(state, 1, "r", 1).state).toBe(state);
  });
});

describe("record", () => {
  it.each<[string, BreakerState, string, BreakerOutcome, Partial<BreakerState>]>([
    ["closed, a failure: counted", closed(1), "r", "failure", { status: "closed", failures: 2 }],
    ["closed, the failure that reaches the threshold: opens for openSeconds", closed(2), "r", "failure", { status: "open", sinceMs: 1_000, openings: 1, reopenAtMs: 11_000 }],
    ["closed, a success: the count starts again", closed(2), "r", "success", { status: "closed", failures: 0 }],
    ["closed, a 4xx: neither counts nor resets", closed(2), "r", "not-counted", { status: "closed", failures: 2 }],
    ["half-open, the probe succeeds: closed", halfOpen("p", 9_000), "p", "success", { status: "closed", sinceMs: 1_000, failures: 0, openings: 0, probe: null }],
    ["half-open, the probe gets a 4xx (the destination answers): closed", halfOpen("p", 9_000), "p", "not-counted", { status: "closed", openings: 0 }],
    ["half-open, the probe fails: open again, for twice as long", halfOpen("p", 9_000), "p", "failure", { status: "open", openings: 2, reopenAtMs: 21_000, probe: null }],
    ["half-open, the third probe fails: four times as long", halfOpen("p", 9_000, 2), "p", "failure", { status: "open", openings: 3, reopenAtMs: 41_000 }],
    ["half-open, a late failure of a request that is not the probe: unchanged", halfOpen("p", 9_000), "r", "failure", { status: "half-open", probe: { id: "p", untilMs: 9_000 } }],
    ["open, a late failure: unchanged", open(5_000), "r", "failure", { status: "open", reopenAtMs: 5_000 }],
    ["open, a late success: closed (the destination answers)", open(5_000), "r", "success", { status: "closed", openings: 0 }],
  ])("%s", (_name, state, id, outcome, after) => {
    expect(record(state, 1_000, SETTINGS, id, outcome)).toMatchObject(after);
  });

  it("returns the same state when nothing changed (no write)", () => {
    const state = closed(0);
    expect(record(state, 1, SETTINGS, "r", "success")).toBe(state);
    expect(record(state, 1, SETTINGS, "r", "not-counted")).toBe(state);
  });

  it("opens at once with a threshold of 1", () => {
    expect(record(closed(), 0, { failures: 1, openSeconds: 10 }, "r", "failure").status).toBe("open");
  });
});

describe("the open period", () => {
  it.each([
    [1, 10_000],
    [2, 20_000],
    [4, 80_000],
    [7, 600_000],
    [60, 600_000],
  ])("after %i openings in a row: %i ms (doubling, capped at 600 s)", (openings, ms) => {
    expect(openPeriodMs(SETTINGS, openings)).toBe(ms);
  });

  it("is never shorter than openSeconds, even above the cap", () => {
    expect(openPeriodMs({ failures: 1, openSeconds: 600 }, 3)).toBe(600_000);
  });
});

describe("the order of arrival", () => {
  it("holds a newer delivery back while an older one waits, not an older one or itself", () => {
    const backlog: Backlog = new Map();
    register(backlog, "old", 100, 5_000);
    expect(olderWaiting(backlog, "new", 200, 1_000)).toBe(true);
    expect(olderWaiting(backlog, "older", 50, 1_000)).toBe(false);
    expect(olderWaiting(backlog, "old", 100, 1_000)).toBe(false);
  });

  it("forgets an entry a grace period after it was due back, and renews it when it waits again", () => {
    const backlog: Backlog = new Map();
    register(backlog, "old", 100, 5_000);
    expect(olderWaiting(backlog, "new", 200, 5_000 + ARRIVAL_GRACE_MS - 1)).toBe(true);
    expect(olderWaiting(backlog, "new", 200, 5_000 + ARRIVAL_GRACE_MS)).toBe(false);
    register(backlog, "old", 100, 30_000);
    prune(backlog, 5_000 + ARRIVAL_GRACE_MS);
    expect(backlog.size).toBe(1);
    prune(backlog, 30_000 + ARRIVAL_GRACE_MS);
    expect(backlog.size).toBe(0);
  });

  it("stays bounded: when full, the newest gives way to an older one, and a newer one is not kept", () => {
    const backlog: Backlog = new Map();
    for (let i = 0; i < MAX_WAITING; i++) register(backlog, `d${i}`, 1_000 + i, 10_000);
    register(backlog, "oldest", 1, 10_000);
    expect(backlog.size).toBe(MAX_WAITING);
    expect(backlog.has("oldest")).toBe(true);
    expect(backlog.has(`d${MAX_WAITING - 1}`)).toBe(false);
    register(backlog, "newest", 99_999, 10_000);
    expect(backlog.has("newest")).toBe(false);
  });

  it.each([
    ["2026-12-06T01:00:00.000Z", Date.UTC(2026, 11, 6, 1)],
    [undefined, null],
    ["not a time", null],
  ])("reads receivedAt %s", (text, ms) => {
    expect(receivedAtMs(text)).toBe(ms);
  });
});
