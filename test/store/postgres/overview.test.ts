/**
 * The overview of the Postgres store (src/store/postgres/overview.ts) against an exact count of the
 * table, through every way a delivery's status changes, as test/store/overview.test.ts checks the
 * D1 store: the walk counts each row once (here also with walks, inserts and retention running at
 * the same moment, which D1 never does), retention takes back what it deletes, a replay moves a row
 * between statuses. Fixture rows are plain SQL; their status changes fire the schema's triggers.
 *
 * In a schema of its own: the walk moves the count's mark far ahead, and retention deletes across
 * sources, which the other files' tests, sharing the database and running at the same time, would see.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StatusCounts } from "../../../src/store/deliveries";
import { COUNT_LAG_MS, OVERVIEW_MAX_AGE_MS } from "../../../src/store/snapshot";
import { deliveryStats } from "../../../src/store/postgres/admin";
import { advanceCounts, COUNT_SQL, maintainOverview, OVERVIEW_SQL, readOverview, refreshOverview } from "../../../src/store/postgres/overview";
import type { Queryable } from "../../../src/store/postgres/queryable";
import { insertDeliveries } from "../../../src/store/postgres/record";
import { resetForReplay } from "../../../src/store/postgres/replay";
import { applyRetention } from "../../../src/store/postgres/sweep";
import { privateSchema } from "../../helpers/postgres-schema";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const iso = (ms: number) => new Date(ms).toISOString();

/** A schema of this file's own (test/helpers/postgres-schema.ts): its tests move the inbox's global state. */
const db = privateSchema("overview");

type Fate = "done" | "unhandled" | "failed" | "received" | "processing";

/** Stores a delivery received at `atMs` and moves it to `fate` as processing would (the fence and count triggers fire). */
async function seed(source: string, id: string, atMs: number, fate: Fate): Promise<void> {
  await db(async (q) => {
    await q.query("INSERT INTO deliveries (source, id, event_type, body, received_at, updated_at) VALUES ($1, $2, 'test.event', '\\x7b7d', $3, $3)", [source, id, iso(atMs)]);
    const token = atMs + 1;
    const where = "WHERE source = $1 AND id = $2";
    if (fate === "done" || fate === "unhandled") {
      await q.query(`UPDATE deliveries SET status = 'done', handled = $3, commit_token = $4, lease_token = $4, attempts = attempts + 1 ${where}`, [source, id, fate === "done", token]);
    }
    if (fate === "failed") await q.query(`UPDATE deliveries SET status = 'failed', error = 'boom', lease_token = $3, attempts = attempts + 1 ${where}`, [source, id, token]);
    if (fate === "processing") await q.query(`UPDATE deliveries SET status = 'processing', lease_token = $3 ${where}`, [source, id, token]);
  });
}

const zero: StatusCounts = { received: 0, processing: 0, done: 0, failed: 0, filtered: 0 };

/** The exact counts of these sources, from a full count of the table. */
async function exact(sources: readonly string[], nowMs: number) {
  const stats = await db((q) => deliveryStats(q, nowMs));
  return Object.fromEntries(sources.map((source) => [source, stats.bySource[source] ?? zero]));
}

async function snapshotOf(sources: readonly string[], nowMs: number) {
  const overview = await db((q) => refreshOverview(q, nowMs));
  return Object.fromEntries(sources.map((source) => [source, overview.bySource[source] ?? zero]));
}

const walkAll = (nowMs: number, limit?: number) =>
  db(async (q) => {
    while ((await advanceCounts(q, nowMs, limit)) !== null);
  });
const mark = () => db(async (q) => (await q.query<{ value: string }>("SELECT value FROM inbox_marks WHERE name = 'counted_through'")).rows[0]?.value ?? "");
const counted = (source: string) =>
  db(async (q) => {
    const { rows } = await q.query<{ total: string; unhandled: string }>("SELECT total, unhandled FROM inbox_counts WHERE source = $1", [source]);
    return { total: Number(rows[0]?.total ?? 0), unhandled: Number(rows[0]?.unhandled ?? 0) };
  });

// Each test walks the count's mark up to its own `now`: so each test's clock is ahead of the one before.
describe("the overview's counts", () => {
  it("are kept in this file's own schema", async () => {
    expect((await db((q) => q.query<{ schema: string }>("SELECT current_schema() AS schema"))).rows[0]!.schema).toMatch(/^test_overview_[0-9a-f]{12}$/);
  });

  it("equal an exact count, whether the rows were passed by the walk or not, after retention and a replay", async () => {
    const now = Date.now();
    const sources = ["ov-a", "ov-b"];
    const fates: Fate[] = ["done", "done", "unhandled", "failed", "received", "processing"];
    for (const [index, fate] of fates.entries()) {
      await seed("ov-a", `old-${index}`, now - 40 * DAY + index, fate);
      await seed("ov-b", `old-${index}`, now - 2 * HOUR + index, fate);
      await seed("ov-b", `new-${index}`, now - 1_000 + index, fate);
    }
    // Nothing walked yet: all of it is counted past the mark.
    expect(await snapshotOf(sources, now)).toEqual(await exact(sources, now));
    // The walk passes the old rows (the newest stay past the mark, COUNT_LAG_MS), in small stretches.
    await walkAll(now, 4);
    expect(await mark()).toBe(iso(now - COUNT_LAG_MS));
    expect(await snapshotOf(sources, now)).toEqual(await exact(sources, now));
    // Walking again counts nothing twice.
    expect(await db((q) => advanceCounts(q, now))).toBeNull();
    expect(await snapshotOf(sources, now)).toEqual(await exact(sources, now));

    // Retention deletes the settled rows of 40 days ago (counted ones): the totals lose them.
    const { deleted } = await db((q) => applyRetention(q, now - 30 * DAY, now - 365 * DAY, 1_000));
    expect(deleted).toBeGreaterThanOrEqual(4);
    expect((await exact(sources, now))["ov-a"]).toEqual({ received: 1, processing: 1, done: 0, failed: 0, filtered: 0 });
    expect(await snapshotOf(sources, now)).toEqual(await exact(sources, now));

    // A replay of a failed delivery behind the mark: failed → received, nothing else moves.
    expect(await db((q) => resetForReplay(q, { source: "ov-b", id: "old-3" }, ["failed"], now))).not.toBeNull();
    expect(await snapshotOf(sources, now)).toEqual(await exact(sources, now));
    const overview = await db((q) => refreshOverview(q, now));
    expect(overview.unhandled).toBe((await db((q) => deliveryStats(q, now))).unhandled);
  });

  it("counts a stretch once when several sweeps walk it at the same moment, each on its own connection", async () => {
    const now = Date.now() + 10 * DAY;
    for (let index = 0; index < 40; index++) await seed("ov-race", `r-${index}`, now - DAY + index, "done");
    await Promise.all([walkAll(now, 3), walkAll(now, 3), walkAll(now, 3), walkAll(now, 5)]);
    expect((await snapshotOf(["ov-race"], now))["ov-race"]).toEqual({ ...zero, done: 40 });
    expect((await counted("ov-race")).total).toBe(40);
  });

  it("counts every row once while receivers insert, walks count and retention deletes, all at the same moment", async () => {
    // Its old rows (40 days back) are still ahead of the mark the test before left (10 days on).
    const now = Date.now() + 55 * DAY;
    const source = "ov-busy";
    // Settled rows for retention to delete while the walks pass them, and rows received long ago
    // that land only now (a browned-out database), dated at the mark as they land.
    for (let index = 0; index < 30; index++) await seed(source, `old-${index}`, now - 40 * DAY + index, index % 3 === 0 ? "unhandled" : "done");
    const late = Array.from({ length: 40 }, (_, index) => ({
      source,
      id: `late-${index}`,
      eventType: null,
      body: new Uint8Array([123, 125]),
      receivedAtMs: now - 2 * DAY + index * 60_000,
    }));
    const insert = async () => {
      for (const delivery of late) await db((q) => insertDeliveries(q, [delivery]));
    };
    const retain = () => db(async (q) => void (await applyRetention(q, now - 30 * DAY, now - 365 * DAY, 2)));
    const retainAll = async () => {
      for (let run = 0; run < 20; run++) await retain();
    };
    await Promise.all([insert(), walkAll(now, 2), walkAll(now, 3), retainAll(), walkAll(now, 7)]);
    await db((q) => applyRetention(q, now - 30 * DAY, now - 365 * DAY, 1_000));
    const stats = await exact([source], now);
    expect(stats[source]).toEqual({ ...zero, received: 40 });
    expect((await snapshotOf([source], now))[source]).toEqual(stats[source]);
    // An hour on, every row is behind the mark (those dated at it included): the counted total alone
    // is exact, and no unhandled one is left.
    await walkAll(now + HOUR);
    expect(await counted(source)).toEqual({ total: 40, unhandled: 0 });
    expect((await snapshotOf([source], now + HOUR))[source]).toEqual(stats[source]);
  }, 30_000);

  it("counts an insert that was in flight with the old mark when a walk began: the walk waits for it", async () => {
    const now = Date.now() + 60 * DAY;
    const source = "ov-in-flight";
    const markBefore = await mark();
    // The receiver's insert, not yet committed: it read the mark as it was, and holds it (FOR KEY SHARE).
    const received = await db(async (receiver) => {
      await receiver.query("BEGIN");
      await insertDeliveries(receiver, [{ source, id: "slow", eventType: null, body: new Uint8Array([1]), receivedAtMs: now - DAY }]);
      let walked = false;
      const walk = db((q) => advanceCounts(q, now)).then((to) => ((walked = true), to));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(walked).toBe(false);
      await receiver.query("COMMIT");
      expect(await walk).toBe(iso(now - COUNT_LAG_MS));
      return (await receiver.query<{ received_at: string }>("SELECT received_at FROM deliveries WHERE source = $1", [source])).rows[0]!.received_at;
    });
    expect(received > markBefore).toBe(true);
    expect(await counted(source)).toEqual({ total: 1, unhandled: 0 });
  });

  it("keeps the unhandled count exact through done marks, a replay and retention, with no index to count", async () => {
    const now = Date.now() + 110 * DAY;
    for (let index = 0; index < 6; index++) await seed("ov-unhandled", `u-${index}`, now - 40 * DAY + index, index < 4 ? "unhandled" : "done");
    expect((await counted("ov-unhandled")).unhandled).toBe(4);
    expect(await db((q) => resetForReplay(q, { source: "ov-unhandled", id: "u-0" }, ["done"], now))).not.toBeNull();
    expect((await counted("ov-unhandled")).unhandled).toBe(3);
    // Retention deletes the settled ones (40 days old): the count loses the 3 unhandled among them.
    await walkAll(now);
    expect((await db((q) => applyRetention(q, now - 30 * DAY, now - 365 * DAY, 1_000))).deleted).toBeGreaterThanOrEqual(5);
    expect(await counted("ov-unhandled")).toEqual({ total: 1, unhandled: 0 });
  });

  it("counts received and failed per hour over the last 24 hours", async () => {
    const now = Date.parse("2030-01-02T10:30:00.000Z");
    await seed("ov-hours", "a", Date.parse("2030-01-02T09:05:00.000Z"), "done");
    await seed("ov-hours", "b", Date.parse("2030-01-02T09:50:00.000Z"), "failed");
    await seed("ov-hours", "c", Date.parse("2030-01-02T10:29:00.000Z"), "done");
    await seed("ov-hours", "d", Date.parse("2030-01-01T09:59:00.000Z"), "failed"); // 24 h 31 min ago: outside
    await db((q) => advanceCounts(q, now));
    const overview = await db((q) => refreshOverview(q, now));
    expect(overview.hourly).toHaveLength(24);
    expect(overview.hourly[0]!.hour).toBe("2030-01-01T11:00:00.000Z");
    expect(overview.hourly.at(-2)).toEqual({ hour: "2030-01-02T09:00:00.000Z", received: 2, failed: 1 });
    expect(overview.hourly.at(-1)).toEqual({ hour: "2030-01-02T10:00:00.000Z", received: 1, failed: 0 });
    expect(overview.last24h).toEqual({ received: 3, failed: 1, failureRate: 1 / 3 });
    // Hours older than two days are dropped as the walk goes on.
    await walkAll(now + 3 * DAY);
    const hours = await db(async (q) => (await q.query<{ hour: string }>("SELECT hour FROM inbox_hours ORDER BY hour")).rows.map((row) => row.hour));
    expect(hours.every((hour) => hour >= iso(now + DAY - HOUR).slice(0, 13))).toBe(true);
  });

  it("are served from the snapshot for a minute once more rows than the live limit would be counted (0 here, for an inbox under load), then put together again; the sweeper's part refreshes a stale one", async () => {
    const now = Date.parse("2031-01-01T00:00:00.000Z");
    await db((q) => refreshOverview(q, now));
    const before = (await db((q) => readOverview(q, now + 1_000, 0))).counts.done;
    await seed("ov-cache", "x", now - DAY, "done");
    expect((await db((q) => readOverview(q, now + OVERVIEW_MAX_AGE_MS - 1, 0))).counts.done).toBe(before);
    const later = await db((q) => readOverview(q, now + OVERVIEW_MAX_AGE_MS, 0));
    expect(later.counts.done).toBe(before + 1);
    expect(later.asOf).toBe(iso(now + OVERVIEW_MAX_AGE_MS));
    await seed("ov-cache", "y", now - DAY, "done");
    await db((q) => maintainOverview(q, now + 2 * OVERVIEW_MAX_AGE_MS));
    expect(await mark()).toBe(iso(now + 2 * OVERVIEW_MAX_AGE_MS - COUNT_LAG_MS));
    expect(await db((q) => readOverview(q, now + 2 * OVERVIEW_MAX_AGE_MS + 1, 0))).toMatchObject({ asOf: iso(now + 2 * OVERVIEW_MAX_AGE_MS), counts: { done: before + 2 } });
    // With the default limit (few rows to count here) it is put together on every read, never stored.
    expect((await db((q) => readOverview(q, now + 2 * OVERVIEW_MAX_AGE_MS + 2))).asOf).toBe(iso(now + 2 * OVERVIEW_MAX_AGE_MS + 2));
  });

  it("reads the oldest waiting delivery live", async () => {
    const now = Date.parse("2032-01-01T00:00:00.000Z");
    await db((q) => refreshOverview(q, now));
    const oldest = (await db((q) => deliveryStats(q, now))).oldestWaitingSeconds;
    expect(oldest).not.toBeNull();
    expect((await db((q) => readOverview(q, now))).oldestWaitingSeconds).toBe(oldest);
  });
});

describe("the overview's cost", () => {
  /** The plan of `sql` with sequential scans priced out: whether an index serves every read of deliveries. */
  async function planOf(sql: string, params: unknown[]): Promise<string> {
    return db(async (q) => {
      await q.query("BEGIN");
      try {
        await q.query("SET LOCAL enable_seqscan = off");
        return (await q.query<{ "QUERY PLAN": string }>(`EXPLAIN ${sql}`, params)).rows.map((row) => row["QUERY PLAN"]).join("\n");
      } finally {
        await q.query("ROLLBACK");
      }
    });
  }

  it("reads an index or a small table for each part of the snapshot, never the deliveries table as a whole", async () => {
    const plan = await planOf(OVERVIEW_SQL, ["2026-01-01T00", "2026-01-01T00:00:00.000Z"]);
    expect(plan).not.toMatch(/Seq Scan on deliveries/);
    for (const index of ["deliveries_by_age", "deliveries_pending", "deliveries_failed"]) expect(plan).toContain(index);
  });

  it("walks through the age index", async () => {
    const from = "2026-01-01T00:00:00.000Z";
    const to = "2026-01-02T00:00:00.000Z";
    for (const [sql, params] of [
      [COUNT_SQL.stretchEnd, [from, to, 10]],
      [COUNT_SQL.nextAfter, [from, to]],
      [COUNT_SQL.count, [from, to, "2026-01-01T00"]],
    ] as const) {
      const plan = await planOf(sql, [...params]);
      expect(plan, sql).not.toMatch(/Seq Scan on deliveries/);
      expect(plan, sql).toContain("deliveries_by_age");
    }
  });
});
