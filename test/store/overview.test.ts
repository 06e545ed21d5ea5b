/**
 * The overview's numbers through the store (`overview`, `maintainOverview`, `stats`), on either
 * store, against an exact count of the table, through every way a delivery's status changes: the
 * walk counts each row once, retention takes back what it deletes, a replay moves a row between
 * statuses, a row that lands behind the count's mark is still counted. D1's walk in small
 * stretches and its read costs: d1/overview.test.ts; Postgres's: test/store/postgres/overview.test.ts.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sql } from "../../src/sql";
import { openStore } from "../../src/store";
import { COUNT_LAG_MS, COUNTED_THROUGH, OVERVIEW_MARK } from "../../src/store/snapshot";
import { count, exec, firstRow, recordDelivery } from "../helpers/store-db";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const body = new TextEncoder().encode("{}");
const store = () => openStore(env);

type Fate = "done" | "unhandled" | "failed" | "received" | "processing" | "filtered";

/** Stores a delivery received at `atMs` and moves it to `fate` as processing would, under the lease token `atMs + 1`. */
async function seed(source: string, id: string, atMs: number, fate: Fate): Promise<void> {
  const ref = { source, id };
  // A filtered one is stored so by its insert (store/filtered.ts), as the receiver does.
  await recordDelivery({ ...ref, eventType: "test.event", body, receivedAtMs: atMs, filtered: fate === "filtered" ? "filtered: type equals \"x\"; saw \"test.event\"" : null });
  const token = atMs + 1;
  if (fate === "done" || fate === "unhandled") expect(await store().commitDone(ref, token, { handled: fate === "done", effects: [] }, atMs + 10)).toEqual({ kind: "committed" });
  if (fate === "failed") expect(await store().recordResult(ref, token, { kind: "failed", error: "boom" }, atMs + 10)).toBe(1);
  if (fate === "processing") expect(await store().claim(ref, token, { previousToken: 0, maxAttempts: 5 }, atMs + 10)).toMatchObject({ kind: "run" });
}

/** The exact counts of these sources, from a full count of the table. */
async function exact(sources: readonly string[], nowMs: number) {
  const stats = await store().stats(nowMs);
  return Object.fromEntries(sources.map((source) => [source, stats.bySource[source] ?? { received: 0, processing: 0, done: 0, failed: 0, filtered: 0 }]));
}

/** The overview put together afresh at `nowMs`: the stored snapshot dropped first (either store keeps it in inbox_marks). */
async function freshOverview(nowMs: number) {
  await exec(sql`DELETE FROM inbox_marks WHERE name = ${OVERVIEW_MARK}`);
  return store().overview(nowMs);
}

async function snapshotOf(sources: readonly string[], nowMs: number) {
  const overview = await freshOverview(nowMs);
  return Object.fromEntries(sources.map((source) => [source, overview.bySource[source] ?? { received: 0, processing: 0, done: 0, failed: 0, filtered: 0 }]));
}

/** How far the count's walk has come. */
async function countedThrough(): Promise<string> {
  return (await firstRow<{ value: string }>(sql`SELECT value FROM inbox_marks WHERE name = ${COUNTED_THROUGH}`))!.value;
}

const unhandledRows = () => count(sql`SELECT COUNT(*) AS n FROM deliveries WHERE status = 'done' AND handled = ${false}`);

// Each test walks the count's mark up to its own `now`, and rows stored behind the mark are dated
// at it (see below): so each test's clock is ahead of the one before.
describe("the overview's counts", () => {
  it("equal an exact count, whether the rows were passed by the walk or not, after retention and a replay", async () => {
    const now = Date.now();
    const sources = ["ov-a", "ov-b"];
    const fates: Fate[] = ["done", "done", "unhandled", "failed", "received", "processing", "filtered"];
    for (const [index, fate] of fates.entries()) {
      await seed("ov-a", `old-${index}`, now - 40 * DAY + index, fate);
      await seed("ov-b", `old-${index}`, now - 2 * HOUR + index, fate);
      await seed("ov-b", `new-${index}`, now - 1_000 + index, fate);
    }
    // Nothing walked yet: all of it is counted past the mark.
    expect(await snapshotOf(sources, now)).toEqual(await exact(sources, now));
    // The sweeper's part walks past the old rows (the newest stay past the mark, COUNT_LAG_MS).
    await store().maintainOverview(now);
    expect(await countedThrough()).toBe(new Date(now - COUNT_LAG_MS).toISOString());
    expect(await snapshotOf(sources, now)).toEqual(await exact(sources, now));
    // Walking again counts nothing twice.
    await store().maintainOverview(now);
    expect(await snapshotOf(sources, now)).toEqual(await exact(sources, now));

    // Retention deletes the settled rows of 40 days ago (counted ones): the totals lose them.
    const { deleted } = await store().applyRetention(now - 30 * DAY, now - 365 * DAY, 1_000);
    expect(deleted).toBeGreaterThanOrEqual(5);
    expect((await exact(sources, now))["ov-a"]).toEqual({ received: 1, processing: 1, done: 0, failed: 0, filtered: 0 });
    expect(await snapshotOf(sources, now)).toEqual(await exact(sources, now));

    // A replay of a failed delivery behind the mark: failed → received, nothing else moves.
    expect(await store().resetForReplay({ source: "ov-b", id: "old-3" }, ["failed"], now)).not.toBeNull();
    expect(await snapshotOf(sources, now)).toEqual(await exact(sources, now));
    // The filtered ones are counted apart from done, and a replay of one behind the mark moves it to received.
    expect((await exact(sources, now))["ov-b"]?.filtered).toBe(2);
    expect(await store().resetForReplay({ source: "ov-b", id: "old-6" }, ["filtered"], now)).not.toBeNull();
    expect((await exact(sources, now))["ov-b"]?.filtered).toBe(1);
    expect(await snapshotOf(sources, now)).toEqual(await exact(sources, now));
    expect((await freshOverview(now)).unhandled).toBe(await unhandledRows());
  });

  it("keeps the unhandled count exact through done marks, a replay and retention", async () => {
    const now = Date.now() + 100 * DAY;
    for (let index = 0; index < 6; index++) await seed("ov-unhandled", `u-${index}`, now - 40 * DAY + index, index < 4 ? "unhandled" : "done");
    const unhandled = () => count(sql`SELECT unhandled FROM inbox_counts WHERE source = 'ov-unhandled'`);
    expect(await unhandled()).toBe(4);
    expect(await store().resetForReplay({ source: "ov-unhandled", id: "u-0" }, ["done"], now)).not.toBeNull();
    expect(await unhandled()).toBe(3);
    // Retention deletes the settled ones (40 days old): the count loses the 3 unhandled among them.
    await store().maintainOverview(now);
    expect((await store().applyRetention(now - 30 * DAY, now - 365 * DAY, 1_000)).deleted).toBeGreaterThanOrEqual(5);
    expect(await unhandled()).toBe(0);
    expect(await unhandledRows()).toBe(0);
  });

  it("dates a row that lands behind the count's mark at the mark, so that the walk still counts it and retention never takes it out uncounted", async () => {
    const now = Date.now() + 200 * DAY;
    await store().maintainOverview(now);
    const mark = await countedThrough();
    // Received (by its receiver's clock) ten minutes before the mark, stored only now.
    await seed("ov-late", "late", Date.parse(mark) - 10 * 60_000, "done");
    const row = await firstRow<{ received_at: string }>(sql`SELECT received_at FROM deliveries WHERE source = 'ov-late'`);
    expect(row!.received_at).toBe(mark);
    await store().maintainOverview(now + HOUR);
    expect((await snapshotOf(["ov-late"], now + HOUR))["ov-late"]).toEqual((await exact(["ov-late"], now + HOUR))["ov-late"]);
    expect(await count(sql`SELECT total FROM inbox_counts WHERE source = 'ov-late'`)).toBe(1);
  });

  it("counts received and failed per hour over the last 24 hours", async () => {
    const now = Date.parse("2030-01-02T10:30:00.000Z");
    await seed("ov-hours", "a", Date.parse("2030-01-02T09:05:00.000Z"), "done");
    await seed("ov-hours", "b", Date.parse("2030-01-02T09:50:00.000Z"), "failed");
    await seed("ov-hours", "c", Date.parse("2030-01-02T10:29:00.000Z"), "done");
    await seed("ov-hours", "d", Date.parse("2030-01-01T09:59:00.000Z"), "failed"); // 24 h 31 min ago: outside
    await store().maintainOverview(now);
    const overview = await freshOverview(now);
    expect(overview.hourly).toHaveLength(24);
    expect(overview.hourly[0]!.hour).toBe("2030-01-01T11:00:00.000Z");
    expect(overview.hourly.at(-2)).toEqual({ hour: "2030-01-02T09:00:00.000Z", received: 2, failed: 1 });
    expect(overview.hourly.at(-1)).toEqual({ hour: "2030-01-02T10:00:00.000Z", received: 1, failed: 0 });
    expect(overview.last24h).toEqual({ received: 3, failed: 1, failureRate: 1 / 3 });
  });

  it("are put together afresh on every read while few rows are counted live: what changed since the last snapshot shows at once, as on the list page", async () => {
    const now = Date.parse("2031-01-01T00:00:00.000Z");
    await freshOverview(now);
    const before = await store().overview(now + 1_000);
    await seed("ov-live", "x", now - DAY, "done");
    await seed("ov-live", "y", now - DAY, "failed");
    const after = await store().overview(now + 2_000);
    expect(after.counts.done).toBe(before.counts.done + 1);
    expect(after.counts.failed).toBe(before.counts.failed + 1);
    expect(after.asOf).toBe(new Date(now + 2_000).toISOString());
    expect(after.bySource["ov-live"]).toEqual((await exact(["ov-live"], now + 2_000))["ov-live"]);
  });

  it("reads the oldest waiting delivery live", async () => {
    const now = Date.parse("2032-01-01T00:00:00.000Z");
    await freshOverview(now);
    await seed("ov-oldest", "waiting", now - 3 * DAY, "received");
    const oldest = await firstRow<{ at: string }>(sql`SELECT MIN(received_at) AS at FROM deliveries WHERE status IN ('received', 'processing')`);
    expect((await store().overview(now)).oldestWaitingSeconds).toBe(Math.floor((now - Date.parse(oldest!.at)) / 1000));
  });
});
